import re

import pytest
import torch

from benchctl.measure.passes import NO_BACKWARD, as_tuple, grad_outputs, has_backward, has_own_leaves, make_setup


def test_backward_returns_a_pass_through_gradient_without_copying_it():
    x = torch.randn(64, 32, requires_grad=True)
    table = torch.randn(32, requires_grad=True)
    grads = (torch.randn(64, 32),)
    thunk = make_setup(lambda: x + table, {"x": x, "table": table}, grads, "backward")()
    grad_x, grad_table = thunk()
    assert grad_x.data_ptr() == grads[0].data_ptr()  # out = x + table: x's gradient is grad_out itself
    torch.testing.assert_close(grad_table, grads[0].sum(0))
    assert x.grad is None and table.grad is None  # nothing is accumulated between repetitions


def test_own_leaves_are_found_in_the_graph():
    layer = torch.nn.Linear(8, 4)
    x = torch.randn(16, 8, requires_grad=True)
    assert has_own_leaves(layer(x), {"x": x})  # the layer's weight and bias
    assert not has_own_leaves(torch.nn.functional.linear(x, layer.weight), {"x": x, "w": layer.weight})
    assert not has_own_leaves(torch.randn(3), {})  # no graph at all


@pytest.mark.parametrize("pass_name", ["backward", "forward_backward"])
def test_leaves_of_the_implementation_get_their_gradient_by_accumulation(pass_name):
    layer = torch.nn.Linear(8, 4)
    x = torch.randn(16, 8, requires_grad=True)
    grads = (torch.randn(16, 4),)
    setup = make_setup(lambda: layer(x), {"x": x}, grads, pass_name, accumulate=True)
    setup()()
    torch.testing.assert_close(layer.weight.grad, grads[0].t() @ x.detach())
    setup()()  # a second repetition adds, as a training step would; the input's grad starts afresh
    torch.testing.assert_close(layer.weight.grad, 2 * grads[0].t() @ x.detach())
    torch.testing.assert_close(x.grad, grads[0] @ layer.weight.detach())


def test_an_unknown_pass_is_refused():
    with pytest.raises(ValueError, match="unknown pass 'sideways'"):
        make_setup(lambda: torch.ones(1), {}, (), "sideways")


@pytest.mark.parametrize("pass_name", ["backward", "forward_backward"])
def test_an_output_that_carries_no_gradient_is_left_out_of_the_backward(pass_name):
    logits = torch.randn(8, 6, requires_grad=True)
    call = lambda: torch.topk(logits, 2, dim=-1)  # noqa: E731  (values, indices): the indices carry none
    grads = grad_outputs(call())
    assert grads[0].shape == (8, 2) and grads[1] is None
    thunk = make_setup(call, {"logits": logits}, grads, pass_name)()
    result = thunk()
    (grad_logits,) = result if pass_name == "backward" else result[1]
    indices = torch.topk(logits, 2, dim=-1).indices
    torch.testing.assert_close(grad_logits, torch.zeros(8, 6).scatter(1, indices, grads[0]))


def test_where_no_output_carries_a_gradient_there_is_no_backward():
    x = torch.randn(4, 5)  # requires no grad
    grads = grad_outputs((x.amax(-1), x.argmax(-1)))
    assert grads == (None, None) and not has_backward(grads)
    assert make_setup(lambda: x.amax(-1), {"x": x}, grads, "forward")()().shape == (4,)
    with pytest.raises(ValueError, match=re.escape(NO_BACKWARD)):
        make_setup(lambda: x.amax(-1), {"x": x}, grads, "backward")()


@pytest.mark.parametrize("out, words", [
    ({"y": torch.ones(2)}, "not a dict"), ((torch.ones(2), None), "not a tuple holding NoneType"),
    ([], "not an empty list"), (3.0, "not a float"),
])
def test_outputs_are_a_tensor_or_a_tuple_or_list_of_them(out, words):
    x = torch.ones(2)
    assert as_tuple(x) == (x,) and as_tuple([x, x]) == (x, x)
    with pytest.raises(TypeError, match=f"an implementation returns a tensor or a tuple of tensors, {words}$"):
        as_tuple(out)
