"""The restated upstream tests (test_autograd.py) that fail, by pytest id within the file, each with
its reason. conftest.py marks them strict xfail: one that passes fails the run, so the lists only
shrink."""
from minigrad import releases

TORCH_FAILS_TOO = {
    "TestAutogradDeviceTypeCPU::test_grad_assignment_cpu":
        "torch.randn(..., dtype=torch.long): torch 2.13 has no int64 kernel for normal_ on the CPU",
    "TestAutogradDeviceTypeCUDA::test_grad_assignment_cuda":
        "torch.randn(..., dtype=torch.long): nor on CUDA (seen with torch 2.11 on an H200)",
}
"""Upstream expects what the installed torch does not do, and minigrad does as that torch does: these
fail with torch itself too (UPSTREAM_LIBRARY=torch). The entries below the first two hold for some
releases only (minigrad.releases)."""
if releases.SHORT_NODE_NAMES_IN_ERRORS:
    TORCH_FAILS_TOO["TestAutograd::test_autograd_views_codegen"] = (
        "upstream expects 'Output 0 of UnbindBackward0 is a view ...'; from torch 2.13 the view errors name the op, "
        "'Output 0 of Unbind is a view ...', and so does minigrad (2.11 and 2.12 pass)")
    TORCH_FAILS_TOO["TestAutograd::test_autograd_multiple_views_python"] = (
        "upstream expects a custom Function's view error to name its node, 'Output 0 of SelectRowBackward is a "
        "view ...'; from torch 2.13 it names the Function, 'Output 0 of SelectRow is a view ...', and so does "
        "minigrad (2.11 passes)")
if releases.RELEASE >= (2, 13):
    TORCH_FAILS_TOO["TestSelectiveActivationCheckpoint::test_function_with_more_than_one_output"] = (
        "upstream counts the policy's calls in the forward and in the recomputation (2); torch 2.13's "
        "_CachedTorchDispatchMode ignores the policy in the recomputation (1), and minigrad, running torch's modes, "
        "does as 2.13 does (2.11 and 2.12 call the policy in the recomputation too)")
if releases.GRAD_REFUSES_EMPTY_INPUTS_FIRST:
    TORCH_FAILS_TOO["TestAutograd::test_grad_empty_inputs"] = (
        "upstream expects ValueError 'grad requires non-empty inputs.'; torch 2.13 raises RuntimeError '`inputs` "
        "argument to `grad()` cannot be empty.' first, and so does minigrad (2.11 passes)")
if releases.CTX_OWNS_NODE:
    TORCH_FAILS_TOO["TestAutograd::test_naughty_autograd_function_stashing_ctx"] = (
        "upstream expects a stashed ctx's saved_tensors to raise once its graph is gone after "
        "backward(retain_graph=True); from torch 2.13 the ctx keeps its node, and so what it saved, and so does "
        "minigrad (2.11 raises, and so does minigrad there: minigrad.graph_owned)")
if releases.NEXTAFTER_HAS_A_DERIVATIVE:
    TORCH_FAILS_TOO["TestAutograd::test_not_implemented_grad"] = (
        "upstream expects nextafter's backward to raise 'the derivative for ... is not implemented'; torch 2.13 "
        "has its derivative, and so has minigrad (2.11 raises)")
if releases.RELEASE < (2, 13):
    for device in ("CPU", "CUDA"):
        TORCH_FAILS_TOO[f"TestAutogradMultipleDispatch{device}::test_trace_backward_nonsquare_171704_{device.lower()}"] = (
            "torch 2.11's trace backward writes past the diagonal of a tall matrix (pytorch issue 171704, which the "
            "test is for), and minigrad lays trace's gradient out with the installed torch's trace_backward (2.13 "
            "passes; 2.12 not checked)")

EXPECTED_FAILURES = {
}
"""Where minigrad differs from the installed torch."""
