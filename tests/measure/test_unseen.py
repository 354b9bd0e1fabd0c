"""Calls on data never drawn before, set against their neighbours: a result cache is fast only on data it saw."""

import pytest

from benchctl.measure import unseen


def test_each_unseen_sample_is_set_against_the_median_of_its_clean_seen_neighbours():
    samples = [1.0, 2.0, 9.0, 4.0, 5.0, 50.0, 6.0]
    flags = [False, False, True, False, False, True, False]
    assert unseen.ratios(samples, flags) == [9.0 / 3.0, 50.0 / 5.0]  # (1, 2, 4, 5) around the first; (4, 5, 6)
    aside = [False, False, False, True, False, False, False]  # 4.0 disturbed: set aside, the next one taken
    assert unseen.ratios(samples, flags, aside) == [9.0 / 3.5, 50.0 / 5.0]  # (1, 2, 5, 6); (2, 5, 6)


@pytest.mark.parametrize("seed", range(50))
def test_each_window_holds_an_unseen_draw_and_a_control_that_is_neither_it_nor_the_draw_after_one(seed):
    import random

    found, controls = unseen.positions(10, unseen.STRICT_EVERY, random.Random(seed))
    assert len(found) == len(controls) == unseen.UNSEEN_MAX
    for k, (u, c) in enumerate(zip(found, controls)):
        window = range(10 + k * unseen.STRICT_EVERY, 10 + (k + 1) * unseen.STRICT_EVERY)
        assert u in window and c in window
        assert c not in found and c - 1 not in found


def test_calls_fast_only_on_seen_data_are_a_result_cache():
    samples = [0.01] * 30
    flags = [False] * 30
    for i in (7, 15, 23):
        samples[i], flags[i] = 1.5, True
    said = unseen.cached(samples, flags)
    assert said.startswith("its 3 timed calls on data never given to it before took 150.0-150.0x as long")
    assert said.endswith("(a result kept from an earlier call: work skipped when timed)")


def test_honest_times_one_slow_unseen_call_and_too_few_judged_are_no_finding():
    flags = [False] * 30
    flags[7] = flags[15] = True
    honest = [1.0] * 30
    honest[7], honest[15] = 1.3, 0.9
    assert unseen.cached(honest, flags) == ""
    one_slow = [1.0] * 30
    one_slow[7], one_slow[15] = 40.0, 1.1  # a stall on one of them: every one must be slow
    assert unseen.cached(one_slow, flags) == ""
    both_slow = [1.0] * 30
    both_slow[7] = both_slow[15] = 40.0
    assert unseen.cached(both_slow, flags, aside=[i == 15 for i in range(30)]) == ""  # one judged
    assert unseen.cached(both_slow, flags) != ""
    assert unseen.cached(both_slow, flags[:-1]) == ""  # flags not of these samples: no finding


def test_a_cache_that_slows_the_calls_after_each_miss_is_judged_against_the_whole_pass():
    samples = [0.01] * 60
    flags = [False] * 60
    for i in (7, 20, 33, 46):
        samples[i], flags[i] = 1.0, True
        samples[i + 1] = samples[i + 2] = 1.5  # its neighbours after it made slower than the miss
    assert all(r < unseen.CACHED_RATIO for r in unseen.ratios(samples, flags))
    assert unseen.overall(samples, flags) == [100.0] * 4
    said = unseen.cached(samples, flags)
    assert said.startswith("its 4 timed calls on data never given to it before took 100.0-100.0x as long as the "
                           "median of its calls on data it had been given")


def test_unseen_calls_as_slow_as_the_controls_are_no_finding_however_fast_the_rest():
    """The copies before an unseen call leave the caches cold: so do a control's (seen data, copied in alike)."""
    n = 200
    samples = [0.45e-3] * 48 + [0.1e-3] * (n - 48)  # the calls around the copies slow, the rest of the pass fast
    flags, controls = [False] * n, [False] * n
    for i in range(6):
        samples[8 * i + 2] = 0.5e-3 + 0.01e-3 * i  # unseen: cold after its copies
        samples[8 * i + 5] = 0.48e-3  # a control: as cold, on seen data
        flags[8 * i + 2], controls[8 * i + 5] = True, True
    assert min(unseen.overall(samples, flags)) > unseen.OVERALL_RATIO  # against the pass's median: 5x
    assert unseen.overall(samples, flags, controls=controls) == [1.0] * 6  # within EXCESS_S of the controls
    assert unseen.cached(samples, flags, controls=controls) == ""
    cache = [0.1e-3 if c else s for s, c in zip(samples, controls)]  # a cache answers a control from memory
    said = unseen.cached(cache, flags, controls=controls)
    assert said.startswith("its 6 timed calls on data never given to it before took 5.0-5.5x as long as its calls "
                           "on data it had been given that was copied in as theirs was")
    aside = [c and i < 40 for i, c in enumerate(controls)]  # all but one control set aside: the pass's median
    assert "as long as the median of its calls" in unseen.cached(samples, flags, aside, controls=controls)


def test_honest_times_drifting_through_the_pass_are_no_finding_against_its_median():
    samples = [1.0] * 20 + [2.5] * 20  # a machine that slowed by 2.5x halfway
    flags = [i in (25, 33) for i in range(40)]
    assert unseen.overall(samples, flags) == [2.5, 2.5]  # the median is the first half's 1.0: under the bar
    assert unseen.cached(samples, flags) == ""


def test_unseen_calls_set_aside_far_more_often_than_the_rest_are_judged_as_they_are():
    """A cache that crowds the machine with processes of its own while it misses has its misses set aside: where
    chance would set aside as many of the unseen calls under SELECTIVE of the time, their flags are not believed."""
    samples, flags = [0.01] * 60, [False] * 60
    for i in (7, 15, 23, 31, 39, 47):
        samples[i], flags[i] = 1.5, True
    crowded = list(flags)  # every unseen call set aside, no other
    assert unseen.believed(flags, crowded) == [False] * 60
    assert unseen.cached(samples, flags, crowded).startswith("its 6 timed calls on data never given to it before")
    assert unseen.unjudged(flags, crowded) == ""
    busy = [f or i % 2 == 0 for i, f in enumerate(flags)]  # half of the others too: a busy machine
    assert unseen.believed(flags, busy) == busy and unseen.cached(samples, flags, busy) == ""
    assert unseen.unjudged(flags, busy) == ("6 of its 6 calls on data never given to it before were set aside as "
                                            "disturbed: not judged for a result kept from an earlier call")
    two_left = [f and i not in (7, 15) for i, f in enumerate(flags)]  # two judged: enough, the flags stand
    assert unseen.believed(flags, two_left) == two_left and unseen.unjudged(flags, two_left) == ""
    assert unseen.cached(samples, flags, two_left).startswith("its 2 timed calls")


def test_the_chance_of_the_unseen_calls_set_aside_is_the_binomial_tail_at_the_seen_share():
    flags = [i % 10 == 5 for i in range(60)]  # 6 unseen, 54 seen
    four_of_six = [f and i < 45 for i, f in enumerate(flags)]  # 4 of the unseen set aside, 2 left: judged
    assert unseen.believed(flags, four_of_six) == four_of_six
    sixth = [f or i in range(0, 54, 6) for i, f in enumerate(flags)]  # all 6 unseen, 9 of 54 seen
    assert unseen.believed(flags, sixth) == [a and not f for a, f in zip(sixth, flags)]  # (10/56)^6: 3e-5
    seen = [i for i, f in enumerate(flags) if not f]
    third = [f or i in seen[::3] for i, f in enumerate(flags)]  # all 6 unseen, 18 of 54 seen
    assert unseen.believed(flags, third) == third  # (19/56)^6 = 1.5e-3: chance
    few = [True, True, False, False]  # two seen calls, none set aside, say little of the share: (1/4)^2 = 0.06
    assert unseen.believed(few, few) == few


def test_the_tail_is_scipy_s():
    from scipy.stats import binom

    for k, n, p in ((3, 3, 0.05), (5, 6, 0.12), (1, 2, 0.25), (0, 4, 0.3), (6, 6, 1.0)):
        assert unseen._at_least(k, n, p) == pytest.approx(binom.sf(k - 1, n, p), rel=1e-9, abs=1e-15)


def test_unseen_calls_on_tiny_inputs_a_few_microseconds_slower_than_the_median_are_no_finding():
    """The README's silu at 2 x 16: 10 us a call, its unseen calls 46-66 us (the copies around them)."""
    samples, flags = [10e-6] * 60, [i % 10 == 5 for i in range(60)]
    samples = [66e-6 if f else s for s, f in zip(samples, flags)]
    samples = [s if not (i - 1) % 10 == 5 else 60e-6 for i, s in enumerate(samples)]  # the call after, as slow
    assert unseen.overall(samples, flags) == [1.0] * 6 and unseen.ratios(samples, flags) == [1.0] * 6
    assert unseen.cached(samples, flags) == ""
    kept = [s * 100 for s in samples]  # the same shape at 1 ms a miss: a cache
    assert unseen.cached(kept, flags).startswith("its 6 timed calls on data never given to it before took 6.6-6.6x "
                                                 "as long as the calls around them")


def test_unseen_calls_a_busy_machine_set_aside_are_judged_by_their_cpu_time():
    """A neighbour sets every call's wall time aside, half of the seen ones too; the calls' CPU seconds do not
    count the waits: a cache's misses used 1.5 ms where its hits used 10 us, an honest call as much as the rest."""
    flags = [i % 10 == 7 for i in range(60)]  # 6 unseen
    walls = [4e-3] * 60  # every one waited a tick: nothing to tell by wall time
    busy = [f or i % 2 == 0 for i, f in enumerate(flags)]
    cache = [1.5e-3 if f else 10e-6 for f in flags]
    assert unseen.by_cpu(flags, busy, cache) and unseen.unjudged(flags, busy, cache) == ""
    assert unseen.cached(walls, flags, busy, cache) == (
        "its 6 timed calls on data never given to it before used 150.0-150.0x the CPU time of the calls around "
        "them on data it had been given (a result kept from an earlier call: work skipped when timed)")
    honest = [8.5e-3 if f else 0.9e-3 for f in flags]  # 9.4x: a busy machine moves CPU time too (CPU_RATIO)
    assert unseen.cached(walls, flags, busy, honest) == ""
    assert not unseen.by_cpu(flags, [False] * 60, cache)  # judged by wall time where the watch left them in
    assert unseen.cached(walls, flags, [False] * 60, cache) == ""
    assert not unseen.by_cpu(flags, busy, cache[:30])  # CPU times not of these calls: not judged that way

