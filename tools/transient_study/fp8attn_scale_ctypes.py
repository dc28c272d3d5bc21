"""The transient study's view of libfp8attn's scale state, over the fp8attn Python package
(bindings/python): the package holds the one copy of the ABI's structs."""
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bindings" / "python" / "src"))

FP8ATTN_RECIPE_DELAYED = "delayed"
FP8ATTN_RECIPE_GEOMETRY = "geometry"


class Library:
    """Loads the library at `path` (through FP8ATTN_LIBRARY) and makes a CPU context."""

    def __init__(self, path):
        os.environ["FP8ATTN_LIBRARY"] = str(path)
        import fp8attn  # noqa: E402: after FP8ATTN_LIBRARY names the library

        self.fp8attn = fp8attn
        self.context = fp8attn.Context("cpu")

    def close(self):
        self.context.close()


class ScaleState:
    """One layer's scale state with the given logit recipe."""

    def __init__(self, library, logit_recipe, token_norm_bound, burn_in_steps):
        self.state = library.fp8attn.ScaleState(1, recipe={"logit": logit_recipe}, token_norm_bound=token_norm_bound,
                                                burn_in_steps=burn_in_steps, context=library.context)

    def set_qk_weights(self, wq, wk, heads_q, heads_kv, head_dim):
        self.state.set_qk_weights(0, wq, wk, heads_q, heads_kv, head_dim)

    def logit_scale(self):
        return self.state.get_scale(0, "logit")[0]

    def report_logit_amax(self, amax):
        self.state.report_amax(0, "logit", amax)

    def step(self):
        self.state.step()

    def close(self):
        self.state.close()
