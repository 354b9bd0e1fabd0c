"""The flame graph of a py-spy profile, drawn from the samples its tables count (`stacks`).

Each box is a frame (function and file, as the tables count frames), as wide as the timed samples whose
stacks go through it, on top of its caller; the timed loop is the bottom box, with benchctl's own frames
folded away as in the tables (`stacks.own`). Callees sit left to right, the widest first. Boxes of under
MIN_SHARE of the samples are left out, with what they call. Hovering a box shows its whole name, its samples
and its share with the 95% interval the tables give it; labels are SVG text, so a browser's find locates a
function. Drawn with matplotlib's object API on an SVG canvas; no torch, nothing printed.

A torch profile's flame graph (`op_svg`) is drawn the same way from its operator stacks (`torch_events`):
each box an operator (or autograd node, or on a GPU the kernel an operator launched), as wide as its time.
"""

from __future__ import annotations

import html
import io
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from benchctl.profile.stacks import (ATEN_OP, GENERATED, Frame, Stacks, classify, own, share_interval,
                                     short_name)
from benchctl.profile.torch_events import KERNEL_TIME

MIN_SHARE = 0.001  # of the timed samples: narrower boxes would be under a pixel wide
WIDTH_IN = 12.0
LEVEL_IN = 0.2  # inches per stack level
TOP_IN = 0.85  # inches above them: the title, what the boxes are, the colours
FONT_PT = 7.0
CHAR_IN = FONT_PT * 0.6 / 72  # a character's width at FONT_PT, about
ROOT = "timed loop"
# Box colours by kind of frame: a little lighter or darker per name, so that neighbours differ.
PYTHON, ATEN, NATIVE, AUTOGRAD, OTHER = "Python", "ATen operator", "C/C++", "autograd", "other operator or range"
COLOURS = {PYTHON: (0.96, 0.78, 0.33), ATEN: (0.45, 0.66, 0.88), NATIVE: (0.93, 0.52, 0.36),
           GENERATED: (0.56, 0.81, 0.56), AUTOGRAD: (0.72, 0.60, 0.86), KERNEL_TIME: (0.87, 0.47, 0.58),
           OTHER: (0.99, 0.87, 0.50), ROOT: (0.75, 0.75, 0.75)}
_BACKWARD = re.compile(r"Backward\d*$")  # an autograd node's name: SliceBackward0


@dataclass
class _Node:
    samples: int = 0
    children: dict[tuple[str, str], "_Node"] = field(default_factory=dict)  # (name, kind) -> node


@dataclass(frozen=True)
class Box:
    name: str  # the frame's key (function and location), the operator's name, or ROOT
    kind: str  # a COLOURS key
    depth: int  # 0 for the root
    start: int  # samples (or microseconds) to its left
    samples: int


def kind(frame: Frame) -> str:
    if frame.location == GENERATED:
        return GENERATED
    if not frame.native:
        return PYTHON
    return ATEN if ATEN_OP.match(frame.function) else NATIVE


def op_kind(name: str) -> str:
    """A torch profile's frame: an ATen operator, an autograd node (and the engine's frame around it), or
    another operator or range (a custom op, a `record_function`)."""
    if name.startswith("aten::"):
        return ATEN
    return AUTOGRAD if name.startswith(("autograd::", "torch::autograd::")) or _BACKWARD.search(name) else OTHER


def _grow(root: _Node, path: list[tuple[str, str]], n: int) -> None:
    root.samples += n
    node = root
    for key in path:
        node = node.children.setdefault(key, _Node())
        node.samples += n


def _tree(stacks: Stacks) -> _Node:
    """The timed samples as a tree of frames, benchctl's own left out (a sample with nothing else stays in
    the root)."""
    root = _Node()
    for stack, n in stacks:
        region, frames = classify(stack)
        if region == "timed":
            _grow(root, [(f.key, kind(f)) for f in own(frames)], n)
    return root


def _op_tree(stacks: Stacks, of: str) -> _Node:
    """A torch profile's operator stacks (rooted at the timed range) as a tree; of GPU kernel time, each
    stack's leaf is the kernel."""
    root = _Node()
    for stack, us in stacks:
        ops = stack[1:]
        kinds = [op_kind(name) for name in ops]
        if of == KERNEL_TIME and ops:
            kinds[-1] = KERNEL_TIME
        _grow(root, list(zip(ops, kinds)), us)
    return root


def boxes(stacks: Stacks) -> list[Box]:
    """Every box of a py-spy profile's flame graph, root first; none for a profile without timed samples."""
    return _boxes(_tree(stacks))


def op_boxes(stacks: Stacks, of: str) -> list[Box]:
    """Every box of a torch profile's flame graph (`of`: what its microseconds are of), root first."""
    return _boxes(_op_tree(stacks, of))


def _boxes(root: _Node) -> list[Box]:
    if not root.samples:
        return []
    least = MIN_SHARE * root.samples
    out = [Box(ROOT, ROOT, 0, 0, root.samples)]
    todo = [(root, 0, 0)]
    while todo:
        node, depth, start = todo.pop()
        for (name, k), child in sorted(node.children.items(), key=lambda item: (-item[1].samples, item[0])):
            if child.samples >= least:
                out.append(Box(name, k, depth + 1, start, child.samples))
                todo.append((child, depth + 1, start))
            start += child.samples
    return out


def _colour(box: Box) -> tuple[float, float, float]:
    shade = 0.9 + 0.2 * (zlib.crc32(box.name.encode()) % 100) / 100  # 0.9-1.1, the same for a name each time
    return tuple(min(1.0, c * shade) for c in COLOURS[box.kind])  # type: ignore[return-value]


def _label(box: Box, width_in: float) -> str:
    """The function's short name, cut to what fits in the box; empty where not three characters do."""
    chars = int(width_in / CHAR_IN) - 1
    if chars < 3:
        return ""
    function = box.name if box.kind == ROOT else box.name.rsplit(" (", 1)[0]
    return short_name(function, chars)


def _tooltip(box: Box, timed: int) -> str:
    low, high = share_interval(box.samples, timed)
    return f"{box.name}: {box.samples} of {timed} samples, {100 * box.samples / timed:.1f}% [{low:.0f}, {high:.0f}]"


def _op_tooltip(box: Box, total_us: int) -> str:
    return f"{box.name}: {box.samples / 1e3:.4g} of {total_us / 1e3:.4g} ms, {100 * box.samples / total_us:.1f}%"


def svg(stacks: Stacks, title: str) -> str:
    """A py-spy profile's flame graph as an SVG document; ValueError where no sample was of the timed loop."""
    drawn = boxes(stacks)
    if not drawn:
        raise ValueError("no sample of the timed loop to draw")
    timed = drawn[0].samples
    caption = (f"{timed} timed samples, the ones the tables count; a box is as wide as the samples in it, its "
               "caller below it; hover over it for its share and 95% interval")
    return _draw(drawn, title, caption, [_tooltip(b, timed) for b in drawn])


def op_svg(stacks: Stacks, title: str, of: str) -> str:
    """A torch profile's flame graph, from its operator stacks in microseconds of `of` (torch_events' CPU_TIME
    or KERNEL_TIME); ValueError where they hold no time."""
    drawn = op_boxes(stacks, of)
    if not drawn:
        raise ValueError("no operator time in the timed loop to draw")
    total = drawn[0].samples
    caption = (f"{total / 1e3:.4g} ms of {of} time in the timed loop, each operator's self time as the table counts "
               "it; a box is as wide as the time in it, its caller below it; hover over it for its time and share")
    return _draw(drawn, title, caption, [_op_tooltip(b, total) for b in drawn])


def _draw(drawn: list[Box], title: str, caption: str, tips: list[str]) -> str:
    """The boxes as an SVG document: the title, the caption, a legend of the kinds drawn, a tooltip a box."""
    from matplotlib import rc_context
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    timed, levels = drawn[0].samples, 1 + max(b.depth for b in drawn)
    height = TOP_IN + LEVEL_IN * levels + 0.05
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "benchctl"}):
        fig = Figure(figsize=(WIDTH_IN, height))
        FigureCanvasSVG(fig)
        ax = fig.add_axes((0.01, 0.05 / height, 0.98, LEVEL_IN * levels / height))
        for i, box in enumerate(drawn):
            ax.add_patch(Rectangle((box.start, box.depth), box.samples, 0.92, facecolor=_colour(box),
                                   edgecolor="none", gid=f"box{i}"))
            label = _label(box, WIDTH_IN * 0.98 * box.samples / timed)
            if label:
                ax.text(box.start + 0.004 * timed, box.depth + 0.46, label, fontsize=FONT_PT, va="center",
                        clip_on=True, parse_math=False)  # a `$` in a name is a character, not mathtext
        ax.set_xlim(0, timed)
        ax.set_ylim(0, levels)
        ax.set_axis_off()
        fig.suptitle(title, fontsize=10, y=1 - 0.08 / height, va="top", parse_math=False)
        fig.text(0.5, 1 - 0.32 / height, caption, ha="center", va="top", fontsize=8, color="0.35")
        kinds = [name for name in COLOURS if any(b.kind == name for b in drawn)]  # the kinds it holds
        fig.legend(handles=[Patch(facecolor=COLOURS[name], label=name) for name in kinds], loc="upper center",
                   bbox_to_anchor=(0.5, 1 - 0.5 / height), ncols=len(kinds), frameon=False, fontsize=FONT_PT)
        out = io.StringIO()
        fig.savefig(out, format="svg")
    return _with_tooltips(out.getvalue(), tips)


def _with_tooltips(text: str, tips: list[str]) -> str:
    """Each box's group given a <title>, which browsers show on hover."""
    def one(match: re.Match[str]) -> str:
        return f'{match.group(0)}\n   <title>{html.escape(tips[int(match.group(1))])}</title>'

    return re.sub(r'<g id="box(\d+)">', one, text)


def write(stacks: Stacks, title: str, path: Path) -> None:
    path.write_text(svg(stacks, title))
