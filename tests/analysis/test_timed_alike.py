import pandas as pd
import pytest

from benchctl.analysis.timed_alike import timed_apart, timing_kinds


@pytest.mark.parametrize("base, new, said", [
    # a CPU row from before its caches could be flushed ran warm: held apart from a flushed one, with one warm
    ({"device": "cpu"}, {"device": "cpu", "flush_l2": True}, "eager in BASE, eager, caches flushed in NEW"),
    ({"device": "cpu"}, {"device": "cpu", "flush_l2": False}, None),
    ({"device": "cpu", "flush_l2": True}, {"device": "cpu", "flush_l2": True}, None),
    # a GPU row from before the flush was recorded may have been either: held apart from neither
    ({"device": "cuda"}, {"device": "cuda", "flush_l2": True}, None),
    ({"device": "cuda", "flush_l2": False}, {"device": "cuda", "flush_l2": True},
     "eager in BASE, eager, L2 flushed in NEW"),
])
def test_rows_timed_on_warm_and_on_flushed_caches_are_held_apart(base, new, said):
    found = timed_apart({"timing_mode": "eager", **base}, {"timing_mode": "eager", **new})
    assert found == (f"timed differently: {said}" if said else None)


def test_a_row_s_timing_in_words_names_the_cache_its_device_flushed():
    rows = pd.DataFrame({"device": ["cpu", "cpu", "cpu", "cuda", "cuda"],
                         "timing_mode": ["eager", "eager", None, "eager", "cuda_graph"],
                         "flush_l2": [True, False, None, True, False]})
    assert list(timing_kinds(rows)) == [" (eager, caches flushed)", "", "", " (eager, L2 flushed)", " (cuda_graph)"]
