"""benchctl.measure.correctness: the bar per dtype and device (TF32 on GPUs), and how a result is compared with
the float64 reference."""

import pytest
import torch

from benchctl.measure import correctness
from benchctl.measure.correctness import TF32_TOLERANCE, TOLERANCE, agree, set_tf32, tolerance


def test_float32_on_a_gpu_is_judged_by_the_tf32_bar_while_either_switch_is_on(tf32):
    tf32(matmul=False, conv=True)  # torch's defaults
    assert tolerance(torch.float32, "cuda") == TF32_TOLERANCE
    tf32(matmul=True, conv=False)
    assert tolerance(torch.float32, "cuda:0") == TF32_TOLERANCE
    tf32(matmul=False, conv=False)
    assert tolerance(torch.float32, "cuda") == TOLERANCE[torch.float32] == 2e-4


def test_cpu_and_other_dtypes_keep_their_own_bar(tf32):
    tf32(matmul=True, conv=True)
    assert tolerance(torch.float32, "cpu") == 2e-4
    assert tolerance(torch.float64, "cuda") == 1e-9
    assert tolerance(torch.bfloat16, "cuda") == 5e-2


def test_compare_measures_error_against_the_largest_reference_magnitude():
    ref = torch.tensor([4.0, -2.0, 1.0], dtype=torch.float64)
    got = torch.tensor([4.0, -2.001, 1.0], dtype=torch.float32)
    c = agree("output", got, ref, 2e-4, True)
    assert c.max_abs_err == pytest.approx(1e-3, rel=1e-3)
    assert c.max_rel_err == pytest.approx(2.5e-4, rel=1e-3)
    assert not c.passed and c.reason == "error 0.00025 > 0.0002"
    assert agree("output", got, ref, TF32_TOLERANCE, True).passed


@pytest.mark.parametrize("got, reason", [
    (None, "not returned (the reference returns more outputs)"),
    (torch.zeros(2), "shape (2,) != reference (3,)"),
    (torch.tensor([1.0, float("nan"), float("inf")]), "non-finite values: 2 of 3 (nan at [1], where the reference "
                                                     "is 1)"),
    (torch.zeros(3), "output is all zeros"),
])
def test_compare_never_passes_a_missing_malformed_or_empty_result(got, reason):
    c = agree("output", got, torch.ones(3, dtype=torch.float64), 1.0, True)
    assert not c.passed and c.reason == reason
    assert agree("grad x", None, torch.ones(3, dtype=torch.float64), 1.0, False).reason == "no gradient was computed"


def test_a_floating_output_of_another_dtype_than_the_cell_s_never_passes():
    """A float32 cell's output computed and returned in float64 is as close to the reference as can be, and is not
    what was asked for; an output whose reference is not floating point (indices) keeps its own dtype."""
    ref = torch.tensor([4.0, -2.0, 1.0], dtype=torch.float64)
    c = agree("output", ref.clone(), ref, 2e-4, True, dtype=torch.float32)
    assert not c.passed and c.reason == "dtype float64, not the cell's float32"
    assert agree("output", ref.float(), ref, 2e-4, True, dtype=torch.float32).passed
    assert agree("grad x", ref.clone(), ref, 2e-4, False, dtype=torch.float32).passed  # autograd casts gradients
    indices = torch.tensor([0, 2, 1])
    assert agree("output", indices, indices, 2e-4, True, dtype=torch.float32).passed


def test_tf32_enabled_follows_either_switch(tf32):
    tf32(matmul=False, conv=True)
    assert correctness.tf32_enabled()
    tf32(matmul=False, conv=False)
    assert not correctness.tf32_enabled()



@pytest.mark.parametrize("mode, matmul, conv", [(None, False, True), (True, True, True), (False, False, False)])
def test_set_tf32_allows_forbids_or_keeps_torchs_setting(tf32, mode, matmul, conv):
    tf32(matmul=False, conv=True)  # torch's defaults
    set_tf32(mode)
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (matmul, conv)


def test_an_integer_output_is_compared_exactly():
    """Top-k's indices are right or wrong: one index off is a failure however large the others are."""
    ref = torch.arange(1000, dtype=torch.int64).reshape(500, 2)
    assert agree("output1", ref.clone(), ref, 2e-4, True, dtype=torch.float32).passed
    off = ref.clone()
    off[3, 1] += 1
    c = agree("output1", off, ref, 2e-4, True, dtype=torch.float32)
    assert not c.passed and c.max_abs_err == 1.0  # relative to 999: 1e-3, which a float's bar would nearly pass
    assert c.reason == ("1 of 1,000 elements differ, compared exactly (an integer output): 8 at [3, 1], where the "
                        "reference is 7")
    mask = torch.tensor([True, False, True])
    assert not agree("output", ~mask, mask, 1.0, True).passed  # a boolean output too, even at a bar of 1
