from urd.core.rng import Stream


def test_same_name_same_draws_and_names_are_independent():
    a, b, c = Stream("x", 1), Stream("x", 1), Stream("x", 2)
    da = [a.below(1000) for _ in range(50)]
    assert da == [b.below(1000) for _ in range(50)]
    assert da != [c.below(1000) for _ in range(50)]


def test_known_values_pin_the_algorithm():
    # Changing the stream changes every episode; this pin makes that a deliberate act.
    s = Stream("urd", 20260807, "t1", 0)
    assert [s.below(10) for _ in range(8)] == PINNED


PINNED = [5, 8, 2, 2, 4, 4, 7, 6]


def test_below_is_uniform_enough_and_in_range():
    s = Stream("uniform")
    counts = [0] * 6
    for _ in range(6000):
        v = s.below(6)
        assert 0 <= v < 6
        counts[v] += 1
    assert all(850 < c < 1150 for c in counts), counts


def test_shuffle_is_a_permutation():
    s = Stream("perm")
    xs = list(range(100))
    ys = s.shuffled(xs)
    assert sorted(ys) == xs and ys != xs and xs == list(range(100))
