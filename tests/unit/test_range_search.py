"""A group of online snapshot ranges as ladders searched by their upper bounds (python_jobs/apply/range_search.py)."""

from __future__ import annotations

import json

from python_jobs.apply.range_search import ladder_plans, ladders, search_tree, with_literals


def bound(**key):
    return [{"name": name, "image": json.dumps({name: value})} for name, value in key.items()]


def page(seq, after, through, low="L"):
    return {"seq": seq, "low": low, "after": after, "from": None, "through": through, "order": {}}


def leaf_of(tree, key, ranges):
    """The range a single-column integer key lands in, by the tree's comparisons."""
    while "leaf" not in tree:
        through = json.loads(ranges[tree["split"]]["through"][0]["image"])["id"]
        tree = tree["below"] if key <= through else tree["above"]
    return tree["leaf"]


def test_consecutive_pages_are_one_ladder_and_a_range_read_again_starts_another():
    pages = [page("1", None, bound(id=10)), page("2", bound(id=10), bound(id=20)), page("3", bound(id=20), None)]
    again = {"seq": "4", "low": "M", "after": None, "from": bound(id=5), "through": bound(id=15), "order": {}}
    after_gap = page("5", bound(id=30), bound(id=40))
    assert [[planned["seq"] for planned in ladder] for ladder in ladders(pages + [again, after_gap])] == [["1", "2", "3"], ["4"], ["5"]]


def test_a_ladder_holds_at_most_the_longest_run_of_ranges():
    keys = list(range(0, 70, 10))
    pages = [page(str(index), bound(id=after) if index else None, bound(id=after + 10)) for index, after in enumerate(keys)]
    assert [len(ladder) for ladder in ladders(pages, longest=3)] == [3, 3, 1]


def test_a_page_whose_lower_bound_is_written_otherwise_starts_a_ladder():
    # 10 and 10.0 may be the same key; a ladder more is only slower, a wrong one would delete rows.
    first = page("1", None, [{"name": "id", "image": '{"id":10}'}])
    second = page("2", [{"name": "id", "image": '{"id":10.0}'}], bound(id=20))
    assert len(ladders([first, second])) == 2


def test_the_search_finds_each_keys_range():
    throughs = [10, 20, 30, 40, 50, 60, 70]
    ranges = [page(str(index), bound(id=throughs[index - 1]) if index else None, bound(id=through))
              for index, through in enumerate(throughs)]
    for count in range(1, len(ranges) + 1):
        tree = search_tree(count)
        for key in range(0, throughs[count - 1] + 1):
            expected = next(index for index, through in enumerate(throughs) if key <= through)
            assert leaf_of(tree, key, ranges) == expected, (count, key)


def test_integer_and_text_bounds_become_literals_where_the_column_holds_them():
    ranges = [{"seq": "1", "low": "L", "after": bound(id=5, name="a'b"), "from": None,
               "through": bound(id=3_000_000_000, name="z"), "order": {}}]
    planned = with_literals(ranges, {"id": "int", "name": "string"})[0]
    assert planned["after"][0]["number"] == "5" and planned["after"][1]["text"] == "a'b"
    # Beyond int: left to the typed read, which refuses it by name.
    assert "number" not in planned["through"][0]
    big = with_literals(ranges, {"id": "Nullable(Int64)", "name": "decimal(10,2)"})[0]
    assert big["through"][0]["number"] == "3000000000" and "text" not in big["through"][1]


def test_booleans_and_numbers_of_text_columns_keep_their_image():
    ranges = [{"seq": "1", "low": "L", "after": bound(flag=True, code=7), "from": None, "through": None, "order": {}}]
    planned = with_literals(ranges, {"flag": "bigint", "code": "string"})[0]
    assert [sorted(column) for column in planned["after"]] == [["image", "name"], ["image", "name"]]


def test_each_ladder_comes_with_its_hull_and_tree():
    pages = [page("1", None, bound(id=10)), page("2", bound(id=10), bound(id=20))]
    (ladder,) = ladder_plans(pages, {"id": "bigint"})
    assert ladder["hull"]["after"] is None and ladder["hull"]["through"][0]["number"] == "20"
    assert ladder["tree"] == {"split": 0, "below": {"leaf": 0}, "above": {"leaf": 1}} and ladder["first"] == 0
    again = {"seq": "3", "low": "M", "after": None, "from": bound(id=5), "through": bound(id=15), "order": {}}
    assert [plan["first"] for plan in ladder_plans(pages + [again], {"id": "bigint"})] == [0, 2]
