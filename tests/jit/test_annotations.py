"""Annotations and calls between scripted functions: refused where torch refuses them, in torch's words."""
from typing import List, Optional, Tuple, Union

import pytest

import scriptc as torch

pytestmark = pytest.mark.invalid_graphs  # refused scripts leave half-built graphs behind


def _reannotates(x: int):
    y = 5
    if x > 1:
        y: Optional[int] = 7  # noqa: F842
    return y


def _list_of_the_wrong_kind():
    wrong: List[int] = [0.5, 1]
    return wrong


def _annotated_empty_list():
    items: List[int] = []
    items.append(3)
    return items


def test_annotating_a_variable_of_an_outer_block_is_refused():
    with pytest.raises(RuntimeError, match="Attempting to declare and annotate the type of variable 'y' but it is "
                                           "already defined in an outer block"):
        torch.jit.script(_reannotates)


def test_a_list_annotation_its_elements_do_not_fit():
    with pytest.raises(RuntimeError, match=r"List type annotation `List\[int\]` did not match the types of the "
                                           r"given list elements, which were unified to Union\[float, int\]"):
        torch.jit.script(_list_of_the_wrong_kind)
    assert torch.jit.script(_annotated_empty_list)() == [3]


def _takes_int(x: int) -> int:
    return x + 10


def _passes_a_str(x):
    return _takes_int("hello") + _takes_int(x)


def _calls_the_bad_one(x):
    return _passes_a_str(x)


def test_an_error_in_a_called_function_names_the_calls_that_reached_it():
    with pytest.raises(RuntimeError) as caught:
        torch.jit.script(_calls_the_bad_one)
    text = str(caught.value)
    assert "Expected a value of type 'int' for argument 'x' but instead found type 'str'." in text
    assert text.index("'_passes_a_str' is being compiled since it was called from '_calls_the_bad_one'") > \
        text.index("found type 'str'")
    assert "def _calls_the_bad_one(x):\n        return _passes_a_str(x)\n" in text
    again = pytest.raises(RuntimeError, torch.jit.script, _calls_the_bad_one)
    assert str(again.value).count("is being compiled") == 1


def _appends_a_str():
    x: List[int] = [1, 2, 3]
    x.append("foo")
    return x


def _appends_an_int_to_floats():
    x: List[float] = []
    x.append(1)
    return x


def _inserts_a_str():
    x: List[int] = []
    x.insert(0, "foo")
    return x


def _fills_optional_and_union_lists():
    maybe: List[Optional[int]] = []
    maybe.append(1)
    maybe.append(None)
    either: List[Union[int, str]] = []
    either.append(2)
    either.append("b")
    return maybe, either


@pytest.mark.parametrize("fn, found, held", [
    (_appends_a_str, "str", "int"), (_appends_an_int_to_floats, "int", "float"), (_inserts_a_str, "str", "int")])
def test_a_list_takes_only_values_of_its_element_type(fn, found, held):
    with pytest.raises(RuntimeError, match=f"Could not match type {found} to t in argument 'el': Type variable 't' "
                                           f"previously matched to type {held} is matched to type {found}"):
        torch.jit.script(fn)


def test_optional_and_union_lists_take_their_members():
    assert torch.jit.script(_fills_optional_and_union_lists)() == ([1, None], [2, "b"])


def _bare_tuple(x: torch.Tensor) -> Tuple:
    return (x, x)


def _bare_optional(x: torch.Tensor) -> Optional:
    return x


@pytest.mark.parametrize("fn, name", [(_bare_tuple, "Tuple"), (_bare_optional, "Optional")])
def test_a_generic_without_its_element_types_is_refused(fn, name):
    with pytest.raises(RuntimeError, match=f"Attempted to use {name} without a contained type"):
        torch.jit.script(fn)
    unit = torch.jit.CompilationUnit()
    with pytest.raises(RuntimeError, match=f"Attempted to use {name} without a contained type"):
        unit.define(f"def f(x: Tensor) -> {name}:\n    return x\n")


def _tuple_of_two():
    return tuple(1, 2)


def _tuple_of_a_list():
    return tuple([1, 2, 3])


def _iterates_an_int(a: int):
    total = 0
    for i in a:
        total += i
    return total


def _augments_a_tuple_item(x: Tuple[int, int]) -> Tuple[int, int]:
    x[0] += 1
    return x


def _assigns_a_tuple_item(x: Tuple[int, int]) -> Tuple[int, int]:
    x[0] = 1
    return x


@pytest.mark.parametrize("fn, message", [
    (_tuple_of_two, "tuple expected exactly 1 arguments but found 2"),
    (_tuple_of_a_list, "cannot statically infer the expected size of a list in this context"),
    (_iterates_an_int, "'int' object is not iterable"),
    (_augments_a_tuple_item, r"Tuple\[int, int\] does not support augmented assignment"),
    (_assigns_a_tuple_item, r"Tuple\[int, int\] does not support subscripted assignment"),
])
def test_refusals_in_torchs_words(fn, message):
    with pytest.raises(RuntimeError, match=message):
        torch.jit.script(fn)


def test_an_instance_attribute_annotated_outside_init_is_a_value_error():
    class Counter:
        def __init__(self, start: int):
            self.count: int = start

        def reset(self, value: int):
            for _ in range(2):
                self.count: int = value

    with pytest.raises(ValueError, match="Type annotations on instance attributes must be declared in __init__, "
                                         "not 'reset'"):
        torch.jit.script(Counter)

    class Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.total = 0

        def forward(self, value: int) -> int:
            self.total: int = value
            return self.total

    with pytest.raises(ValueError, match="not 'forward'"):
        torch.jit.script(Module())


def test_a_dropped_method_is_left_out_with_its_signature():
    class Holder:
        def __init__(self, items: List[int]) -> None:
            self.items = items

        def first(self) -> int:
            return self.items[0]

        @torch.jit._drop
        def tracer_hook(self, tracer: "NoSuchTracer") -> "NoSuchArgument":  # noqa: F821
            return tracer.create_arg(self.items)

    torch.jit.script(Holder)

    @torch.jit.script
    def first_of(items: List[int]) -> int:
        return Holder(items).first()

    assert first_of([4, 5]) == 4


def test_broadcasting_list_from_jit_annotations_makes_one_number_a_list():
    from scriptc.jit.annotations import BroadcastingList2

    def pooled_size(x: torch.Tensor, output_size: BroadcastingList2[int]) -> List[int]:
        return [x.shape[0] * output_size[0], output_size[1]]

    def by_number(x: torch.Tensor) -> List[int]:
        return pooled_size(x, 3)

    def by_pair(x: torch.Tensor) -> List[int]:
        return pooled_size(x, [3, 4])

    x = torch.zeros(2)
    assert torch.jit.script(by_number)(x) == [6, 3]
    assert torch.jit.script(by_pair)(x) == [6, 4]


def _anchors_per_image(x: torch.Tensor, images: int) -> List[torch.Tensor]:
    # torchvision's AnchorGenerator.forward: an annotated list of lists, rebound to a list of tensors
    anchors: List[List[torch.Tensor]] = []
    for i in range(images):
        anchors.append([x, x + i])
    anchors = [torch.cat(per_image) for per_image in anchors]
    return anchors


def _rebound_to_an_int(x: torch.Tensor) -> int:
    size: List[int] = [1, 2]
    size = x.dim() + len(size)
    return size


@pytest.mark.parametrize("fn, args", [(_anchors_per_image, (3,)), (_rebound_to_an_int, ())])
def test_an_annotated_variable_takes_another_type_in_its_own_block(fn, args):
    # torch.jit.script takes both; the compiled result equals the Python run
    x = torch.randn(2, 3)
    ours, expected = torch.jit.script(fn)(x, *args), fn(x, *args)
    if isinstance(expected, list):
        assert len(ours) == len(expected)
        for a, b in zip(ours, expected):
            assert torch.equal(a, b)
    else:
        assert ours == expected


def test_an_annotated_variable_keeps_its_type_in_a_nested_block():
    def rebound_in_a_branch(x: torch.Tensor) -> List[torch.Tensor]:
        a: List[int] = [1]
        if bool(x.sum() > 0):
            a = [x]
        return a

    with pytest.raises(RuntimeError, match="List\\[int\\]"):
        torch.jit.script(rebound_in_a_branch)


def _scale_factor(x: torch.Tensor, flag: bool) -> float:
    # torchvision's GeneralizedRCNNTransform: scale_factor: Optional[float] = None ... scale_factor = scale.item()
    scale_factor: Optional[float] = None
    if flag:
        scale_factor = x.item()
    if scale_factor is None:
        return -1.0
    return scale_factor + 1.0


def _annotated_from_item(x: torch.Tensor) -> float:
    y: float = x.item()
    return y


def test_a_number_from_item_fills_a_variable_declared_float():
    scripted = torch.jit.script(_scale_factor)
    assert scripted(torch.tensor(2.5), True) == 3.5 and scripted(torch.tensor(2.5), False) == -1.0
    with pytest.raises(RuntimeError, match="annotated with type float"):  # as torch refuses it
        torch.jit.script(_annotated_from_item)


def _per_parameter_comments(
    proposals,  # type: List[torch.Tensor]
    scale,  # type: float
    targets=None,  # type: Optional[List[torch.Tensor]]
):
    # type: (...) -> Tuple[List[torch.Tensor], float]
    # torchvision's RoIHeads.select_training_samples: one type comment per parameter line
    if targets is None:
        return [p * scale for p in proposals], scale
    return targets, 0.0


def test_type_comments_on_each_parameter_line():
    scripted = torch.jit.script(_per_parameter_comments)
    scaled, scale = scripted([torch.ones(2)], 2.0)
    assert scaled[0].tolist() == [2.0, 2.0] and scale == 2.0
    kept, zero = scripted([torch.ones(2)], 2.0, [torch.zeros(1)])
    assert kept[0].tolist() == [0.0] and zero == 0.0
