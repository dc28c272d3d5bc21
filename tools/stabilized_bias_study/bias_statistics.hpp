// Running statistics of signed errors per query row, for the stabilized-softmax bias study: the
// mean, its standard deviation and its z-score (mean / (sd / √N)), which is about N(0, 1) when
// the errors have mean zero.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace fp8attn::study {

struct RunningMoments {
  int64_t count = 0;
  double sum = 0.0, sum_sq = 0.0;
  void add(double x) { ++count, sum += x, sum_sq += x * x; }
  void merge(const RunningMoments& m) { count += m.count, sum += m.sum, sum_sq += m.sum_sq; }
  double mean() const { return count ? sum / static_cast<double>(count) : 0.0; }
  double sd() const {
    if (count < 2) return 0.0;
    const double n = static_cast<double>(count);
    return std::sqrt(std::max(0.0, (sum_sq - sum * sum / n) / (n - 1.0)));
  }
  double z() const { return sd() > 0.0 ? mean() / (sd() / std::sqrt(static_cast<double>(count))) : 0.0; }
};

struct BiasStatistics {
  RunningMoments o;  ///< per row: mean over the head dimension of (O − O_FP64)
  RunningMoments d;  ///< per row: (dO·O) − (dO·O_FP64)
  double sum_sq_elements = 0.0;
  int64_t elements = 0;
  void merge(const BiasStatistics& s) {
    o.merge(s.o), d.merge(s.d), sum_sq_elements += s.sum_sq_elements, elements += s.elements;
  }
  double rmse_o() const { return elements ? std::sqrt(sum_sq_elements / static_cast<double>(elements)) : 0.0; }
};

/// Row errors of `out` against `oracle` (both [rows][head_dim] flattened), with dO for D.
inline BiasStatistics row_errors(const std::vector<float>& out, const std::vector<float>& oracle,
                                 const std::vector<double>& d_out, int head_dim) {
  BiasStatistics s;
  for (size_t row = 0; row + static_cast<size_t>(head_dim) <= out.size(); row += static_cast<size_t>(head_dim)) {
    double e_sum = 0.0, d_err = 0.0;
    for (size_t e = row; e < row + static_cast<size_t>(head_dim); ++e) {
      const double err = static_cast<double>(out[e]) - static_cast<double>(oracle[e]);
      e_sum += err;
      d_err += d_out[e] * err;
      s.sum_sq_elements += err * err;
    }
    s.o.add(e_sum / head_dim);
    s.d.add(d_err);
    s.elements += head_dim;
  }
  return s;
}

}  // namespace fp8attn::study
