"""Interactive figures that work without a kernel: precomputed frames behind sliders.

Used by the widget demos of chapters 1, 2 and 5. ``frame_slider(draw, controls=...)`` calls
``draw(**params)`` once for every combination of the control values (a grid), stores each
figure as a PNG frame together with whatever ``draw`` printed, and displays as

* ``text/html``: the frames behind ``<input type="range">`` sliders and a few lines of
  inline JavaScript that swap the image, so the static online book stays interactive; a frame
  too wide for a phone also has its narrow rendering (``attnbook.plotting.narrow_figure``),
  which the script shows on screens narrower than 600 CSS px, as the book does for figures
  (a frame that the narrow rendering only draws smaller is stored once, at that size, which
  reads on every screen and keeps the page light);
* ``application/vnd.jupyter.widget-view+json``: a live ipywidgets ``interactive`` control
  over the same values, which Jupyter prefers when a kernel is running.

The book's configuration ranks ``text/html`` above the widget view, so each reader gets the
control that works where they read.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import io
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import matplotlib.pyplot as plt

from attnbook.plotting import (PIXEL_RATIO, _draws_smaller, _png_size, figure_png,
                               narrow_figure)

__all__ = ["Frame", "FrameSlider", "frame_slider"]


#: Screens that show a frame's narrow rendering (book/_ext/book_html.py's NARROW_BREAKPOINT).
_NARROW_SCREEN = "(max-width: 599.98px)"


@dataclass(frozen=True)
class Frame:
    """One precomputed view: the PNG bytes, its alt text, the text ``draw`` printed and, for a
    frame too wide for a phone, the PNG of its narrow rendering (else None)."""

    png: bytes
    alt: str
    text: str
    narrow: bytes | None = None


@dataclass
class FrameSlider:
    """Frames of ``draw`` over a grid of control values; see :func:`frame_slider`."""

    draw: Callable[..., Any]
    controls: dict[str, tuple]
    labels: dict[str, str]
    initial: dict[str, Any]
    alt: str
    value_format: str
    frames: dict[tuple[int, ...], Frame] = field(repr=False)
    _widget: Any = field(default=None, repr=False)

    def frame(self, **params: Any) -> Frame:
        """The stored frame for ``params`` (each a value of its control)."""
        unknown = sorted(set(params) - set(self.controls))
        if unknown:
            raise TypeError(f"{unknown[0]} is not a control of this slider "
                            f"(controls: {list(self.controls)})")
        key = []
        for name, values in self.controls.items():
            value = params.get(name, self.initial[name])
            if value not in values:
                raise ValueError(f"{name} must be one of the precomputed values {values}, "
                                 f"got {value!r}")
            key.append(values.index(value))
        return self.frames[tuple(key)]

    def to_html(self) -> str:
        """Self-contained HTML: sliders, the initial frame and the script that swaps frames
        (on a screen narrower than 600 CSS px, to their narrow renderings where they have
        one)."""
        start = tuple(self.controls[name].index(self.initial[name]) for name in self.controls)
        first = self.frames[start]
        data = {
            "values": [[self.value_format.format(v) for v in values]
                       for values in self.controls.values()],
            "frames": {",".join(map(str, key)): _frame_data(frame)
                       for key, frame in self.frames.items()},
        }
        payload = json.dumps(data, sort_keys=True)
        uid = "attn-slider-" + hashlib.sha1(payload.encode()).hexdigest()[:12]
        rows = []
        for i, (name, values) in enumerate(self.controls.items()):
            label = html.escape(self.labels[name])
            shown = html.escape(self.value_format.format(self.initial[name]))
            rows.append(
                f'<label class="attn-slider-control"><span>{label}</span>'
                f'<input type="range" min="0" max="{len(values) - 1}" step="1" '
                f'value="{start[i]}" aria-label="{label}">'
                f'<output>{shown}</output></label>')
        text = f'<pre class="attn-slider-text">{html.escape(first.text)}</pre>' \
            if any(frame.text for frame in self.frames.values()) else ""
        script = (_SCRIPT.replace("__ID__", uid).replace("__NARROW__", _NARROW_SCREEN)
                  .replace("__DATA__", payload.replace("</", "<\\/")))
        return (f'<div class="attn-slider" id="{uid}">'
                f'<div class="attn-slider-controls">{"".join(rows)}</div>'
                f'<img src="{_data_uri(first.png)}" width="{_css_width(first.png)}" '
                f'alt="{html.escape(first.alt)}">{text}</div>'
                f"<script>{script}</script>")

    def widget(self):
        """The live ipywidgets control (``interactive``) over the same values, built once."""
        if self._widget is None:
            try:
                import ipywidgets
            except ImportError as exc:
                raise ImportError("FrameSlider.widget() needs ipywidgets (pip install "
                                  "'attnlib[book]' or pip install ipywidgets); the frozen "
                                  "figure (_repr_html_) works without it") from exc

            def show(**params: Any) -> None:
                self.draw(**params)
                plt.show()

            sliders = {name: ipywidgets.SelectionSlider(
                options=[(self.value_format.format(v), v) for v in values],
                value=self.initial[name], description=self.labels[name],
                style={"description_width": "initial"}, continuous_update=False)
                for name, values in self.controls.items()}
            self._widget = ipywidgets.interactive(show, **sliders)
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        bundle = dict(self.widget()._repr_mimebundle_())
        bundle["text/html"] = self.to_html()
        bundle["text/plain"] = (f"FrameSlider over {', '.join(self.labels.values())} "
                                f"({len(self.frames)} frames)")
        return bundle


def frame_slider(draw: Callable[..., Any], *, controls: Mapping[str, Sequence[Any]],
                 alt: str, labels: Mapping[str, str] | None = None,
                 initial: Mapping[str, Any] | None = None,
                 value_format: str = "{:g}") -> FrameSlider:
    """Precompute ``draw(**params)`` on the grid ``controls`` and return a displayable slider.

    ``draw`` draws one matplotlib figure for keyword arguments named like the keys of
    ``controls`` and returns it or leaves it current; it may end with ``plt.show()``, which
    does nothing while the frames are rendered. Anything it prints is kept with the frame.
    ``alt`` is a ``str.format`` template filled with the parameters, e.g.
    ``"weights for c = {scale:g}"``. ``labels`` name the sliders
    (default: the keys), ``initial`` picks the first frame shown (default: each control's
    middle value), ``value_format`` formats the values next to the sliders.
    """
    if not callable(draw):
        raise TypeError(f"draw must be callable, got {type(draw).__name__}")
    if not controls:
        raise ValueError("controls must name at least one parameter and its values")
    grid = {name: tuple(values) for name, values in controls.items()}
    for name, values in grid.items():
        if len(values) < 2 or len(set(values)) != len(values):
            raise ValueError(f"controls[{name!r}] must hold at least two distinct values, "
                             f"got {values!r}")
    if not isinstance(alt, str):
        raise TypeError(f"alt must be a str.format template such as 'c = {{c:g}}', got "
                        f"{type(alt).__name__}")
    for key in itertools.product(*grid.values()):        # every frame's alt text, before drawing
        try:
            alt.format(**dict(zip(grid, key)))
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"alt must be a str.format template of the parameters "
                             f"{', '.join(grid)} (e.g. {'{' + next(iter(grid)) + '}'!r}), got "
                             f"{alt!r}, which fails with {type(exc).__name__}: {exc}") from None
    labels = {name: (labels or {}).get(name, name) for name in grid}
    start = {name: values[len(values) // 2] for name, values in grid.items()}
    for name, value in (initial or {}).items():
        if name not in grid or value not in grid[name]:
            raise ValueError(f"initial[{name!r}] must be one of controls[{name!r}], "
                             f"got {value!r}")
        start[name] = value
    frames = {}
    for key in itertools.product(*(range(len(values)) for values in grid.values())):
        params = {name: grid[name][i] for name, i in zip(grid, key)}
        frames[key] = _render(draw, params, alt)
    return FrameSlider(draw=draw, controls=grid, labels=labels, initial=start, alt=alt,
                       value_format=value_format, frames=frames)


def _render(draw: Callable[..., Any], params: dict[str, Any], alt: str) -> Frame:
    before = set(plt.get_fignums())
    printed = io.StringIO()
    show, plt.show = plt.show, lambda *args, **kwargs: None
    try:
        with contextlib.redirect_stdout(printed):
            fig = draw(**params)
        fig = fig if fig is not None else plt.gcf()
    finally:
        plt.show = show
    png, narrow = figure_png(fig), narrow_figure(fig)
    narrow_png = None if narrow is None else figure_png(narrow)
    if narrow is not None and _draws_smaller(fig):   # the same drawing, smaller, suits
        png, narrow_png = narrow_png, None            # every screen: one PNG, half the bytes
    for number in set(plt.get_fignums()) - before:
        plt.close(number)
    return Frame(png=png, alt=alt.format(**params), text=printed.getvalue(), narrow=narrow_png)


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _css_width(png: bytes) -> int:
    """The CSS width of a frame's PNG (drawn at PIXEL_RATIO image pixels per CSS pixel)."""
    return _png_size(png)[0] // PIXEL_RATIO


def _frame_data(frame: Frame) -> dict[str, Any]:
    """What the slider's script needs of a frame: its image and CSS width (and those of its
    narrow rendering), alt text and printed text."""
    data = {"src": _data_uri(frame.png), "width": _css_width(frame.png), "alt": frame.alt,
            "text": frame.text}
    if frame.narrow is not None:
        data["narrow"] = {"src": _data_uri(frame.narrow), "width": _css_width(frame.narrow)}
    return data


# Swaps the image (its narrow rendering on a narrow screen, and the alt text and printed
# text) when a slider moves or the screen crosses the narrow width; no libraries.
_SCRIPT = """(function () {
  var root = document.getElementById("__ID__"), data = __DATA__;
  if (!root) { return; }
  var inputs = root.querySelectorAll("input[type=range]");
  var image = root.querySelector("img"), text = root.querySelector(".attn-slider-text");
  var narrow = window.matchMedia ? window.matchMedia("__NARROW__") : null;
  function update() {
    var key = [];
    for (var i = 0; i < inputs.length; i++) {
      key.push(inputs[i].value);
      inputs[i].nextElementSibling.textContent = data.values[i][inputs[i].value];
    }
    var frame = data.frames[key.join(",")];
    var shown = narrow && narrow.matches && frame.narrow ? frame.narrow : frame;
    image.src = shown.src;
    image.setAttribute("width", shown.width);
    image.alt = frame.alt;
    if (text) { text.textContent = frame.text; }
  }
  for (var i = 0; i < inputs.length; i++) { inputs[i].addEventListener("input", update); }
  if (narrow && narrow.addEventListener) { narrow.addEventListener("change", update); }
  if (narrow && narrow.matches) { update(); }
})();"""
