"""Plots the stabilized-softmax bias study's CSV (stabilized_bias_study --out FILE.csv): per
variant, the z-score of the mean signed error of O and of D over all draws (mean / (sd / sqrt(N)),
pooled from the per-draw moments), against the ±3 band where a zero-mean error lands, and the
RMSE of O on a log scale.
Usage: plot_bias.py <study.csv> <out.png>"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1], newline="")))
variants = list(dict.fromkeys(r["variant"] for r in rows))


def pooled(variant, mean_key, sd_key):
    n = s = ss = 0.0
    for r in rows:
        if r["variant"] != variant:
            continue
        k, m, sd = float(r["rows"]), float(r[mean_key]), float(r[sd_key])
        n, s, ss = n + k, s + k * m, ss + (k - 1) * sd * sd + k * m * m
    mean = s / n
    var = (ss - n * mean * mean) / (n - 1)
    return mean / math.sqrt(var / n)


def rmse(variant):
    sel = [r for r in rows if r["variant"] == variant]
    return math.sqrt(sum(float(r["rmse_o"]) ** 2 for r in sel) / len(sel))


fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
x = range(len(variants))
left.bar([i - 0.2 for i in x], [pooled(v, "mean_error_o", "sd_error_o") for v in variants], 0.4, label="O")
left.bar([i + 0.2 for i in x], [pooled(v, "mean_error_d", "sd_error_d") for v in variants], 0.4, label="D = rowsum(dO∘O)")
left.axhspan(-3, 3, color="gray", alpha=0.2, label="|z| < 3")
left.set_xticks(list(x), [v.replace(" (", "\n(") for v in variants], fontsize=8)
left.set_ylabel("z-score of the mean signed error")
left.legend(fontsize=8)
right.bar(list(x), [rmse(v) for v in variants], 0.5, color="tab:green")
right.set_yscale("log")
right.set_xticks(list(x), [v.replace(" (", "\n(") for v in variants], fontsize=8)
right.set_ylabel("RMSE of O against FP64")
fig.suptitle("BF16 attention on tied row maxima: bias (left) and error (right)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print(f"wrote {sys.argv[2]}")
