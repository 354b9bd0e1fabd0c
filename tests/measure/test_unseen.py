"""Calls on data never drawn before, set against their neighbours: a result cache is fast only on data it saw."""

from benchctl.measure import unseen


def test_each_unseen_sample_is_set_against_the_median_of_its_clean_seen_neighbours():
    samples = [1.0, 2.0, 9.0, 4.0, 5.0, 50.0, 6.0]
    flags = [False, False, True, False, False, True, False]
    assert unseen.ratios(samples, flags) == [9.0 / 3.0, 50.0 / 5.0]  # (1, 2, 4, 5) around the first; (4, 5, 6)
    aside = [False, False, False, True, False, False, False]  # 4.0 disturbed: set aside, the next one taken
    assert unseen.ratios(samples, flags, aside) == [9.0 / 3.5, 50.0 / 5.0]  # (1, 2, 5, 6); (2, 5, 6)


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


def test_honest_times_drifting_through_the_pass_are_no_finding_against_its_median():
    samples = [1.0] * 20 + [2.5] * 20  # a machine that slowed by 2.5x halfway
    flags = [i in (25, 33) for i in range(40)]
    assert unseen.overall(samples, flags) == [2.5, 2.5]  # the median is the first half's 1.0: under the bar
    assert unseen.cached(samples, flags) == ""
