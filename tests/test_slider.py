"""Kernel-free sliders: one frame per grid point, HTML that swaps them, a live widget."""

from __future__ import annotations

import base64
import json
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from attnbook import plotting
from attnbook.slider import frame_slider

CALLS: list[dict] = []


def draw(*, slope: float, offset: int = 0):
    CALLS.append({"slope": slope, "offset": offset})
    fig, ax = plotting.figure(width="small")
    ax.plot([0, 1], [offset, offset + slope])
    ax.set_title(f"slope {slope:g}")
    print(f"slope {slope:g}, offset {offset}")
    if offset:
        plt.show()          # a draw function written for the live widget may show its figure
        return None
    return fig


@pytest.fixture()
def slider():
    plt.close("all")        # figures left open by other tests on this worker are not ours
    CALLS.clear()
    return frame_slider(draw, controls={"slope": [0.5, 1.0, 2.0], "offset": [0, 3]},
                        labels={"slope": "slope a"}, initial={"slope": 2.0},
                        alt="a line of slope {slope:g} from {offset}")


def test_one_frame_per_grid_point(slider) -> None:
    assert len(slider.frames) == 6
    assert sorted((c["slope"], c["offset"]) for c in CALLS) == \
        sorted((s, o) for s in (0.5, 1.0, 2.0) for o in (0, 3))
    frame = slider.frame(slope=1.0, offset=3)
    assert frame.png.startswith(b"\x89PNG") and frame.alt == "a line of slope 1 from 3"
    assert frame.text == "slope 1, offset 3\n"
    pngs = {f.png for f in slider.frames.values()}
    assert len(pngs) == 6, "different parameters must give different images"
    assert plt.get_fignums() == [], "frames must not leave figures open"
    assert plt.show.__module__ == "matplotlib.pyplot", "plt.show must be restored"


def test_html_holds_every_frame_and_starts_at_initial(slider) -> None:
    page = slider.to_html()
    assert page.count('type="range"') == 2 and 'aria-label="slope a"' in page
    data = json.loads(re.search(r"data = (\{.*?\});\n", page).group(1).replace("<\\/", "</"))
    assert set(data["frames"]) == {f"{i},{j}" for i in range(3) for j in range(2)}
    assert data["values"] == [["0.5", "1", "2"], ["0", "3"]]
    shown = re.search(r'<img src="data:image/png;base64,([^"]+)"', page).group(1)
    # initial: slope 2 (given), offset 3 (the middle of [0, 3] rounds up to index 1)
    assert base64.b64decode(shown) == slider.frame(slope=2.0, offset=3).png
    assert data["frames"]["2,1"]["alt"] == "a line of slope 2 from 3"


def test_mimebundle_offers_html_and_a_live_widget(slider) -> None:
    bundle = slider._repr_mimebundle_()
    assert {"text/html", "text/plain", "application/vnd.jupyter.widget-view+json"} <= set(bundle)
    live = slider.widget()
    CALLS.clear()
    live.children[0].value = 0.5          # moving the live slider reruns draw
    assert CALLS and CALLS[-1]["slope"] == 0.5
    plt.close("all")


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="draw"):
        frame_slider(None, controls={"slope": [1, 2]}, alt="x")
    with pytest.raises(ValueError, match="controls"):
        frame_slider(draw, controls={}, alt="x")
    with pytest.raises(ValueError, match=r"controls\['slope'\]"):
        frame_slider(draw, controls={"slope": [1.0]}, alt="x")
    with pytest.raises(ValueError, match=r"initial\['slope'\]"):
        frame_slider(draw, controls={"slope": [1.0, 2.0]}, initial={"slope": 3.0}, alt="x")
