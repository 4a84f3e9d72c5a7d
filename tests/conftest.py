"""The test suite's three sizes (README, "Tests"): ``pytest -m quick`` for the edit loop,
``pytest -m "not slow"`` before a commit, ``pytest`` (what CI runs) for everything.

Two markers are given here, by rule, so that a new test falls into the right set without a
list to keep by hand:

- ``slow``: besides the tests marked ``@pytest.mark.slow`` in their files, every test that
  derives the bundled ``crane`` case (64 tokens, 46,000 quantities: seconds to derive and
  round, 10 to 40 s through the CLI or a document) -- a test parametrized with it, or one of
  :data:`CRANE_TESTS`.
- ``quick``: every test that is not slow, outside :data:`NOT_QUICK`: the files that compile
  documents (pdflatex, KaTeX under Node, Chromium, Pandoc), cross-check against PyTorch or
  Hugging Face (importing torch alone takes seconds), run the import linter, sweep random
  cases or every bundled case. Measured on 2026-12-01 under a load of 8 on 2 cores, the
  files left take about 2 minutes of CPU (the seed's 311 tests about 20 s of it).

Under CI (the ``CI`` variable set, as CI runners and ``.ci/run``'s callers do) Hypothesis
draws a fixed set of examples (its ``ci`` profile: ``derandomize``), so that a commit lands
or not on what it changed, not on the luck of the draw of the 10,000-example fuzzers;
anywhere else each run draws anew and explores.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Tests not parametrized with crane that derive it all the same.
CRANE_TESTS = {"test_crane_hand_set_head_sends_the_first_it_to_load", "test_crane_is_summarised",
               "test_crane_is_printed_whole_at_80", "test_all_rows_prints_every_number_of_crane",
               "test_crane_every_json_number_is_printed_whole",
               "test_a_table_of_no_quantity_splits_into_column_groups"}

NOT_QUICK = {
    # documents: pdflatex, KaTeX under Node, Chromium, Pandoc and cmark-gfm
    "test_latex.py", "test_markdown_html.py", "test_documents.py", "test_check_roundtrip.py",
    # cross-checks against PyTorch and Hugging Face
    "test_torch_crosscheck.py", "test_gpt2_crosscheck.py", "test_post_norm_crosscheck.py", "test_import.py",
    "test_activations.py", "test_rmsnorm.py", "test_block_layouts.py", "test_kv_heads.py", "test_lm_loss.py",
    "test_given_inputs.py", "test_weights.py", "test_rope.py",
    # the import linter on a copy of the package; random cases; every bundled case (or the CLI
    # in a process of its own) test by test
    "test_layers.py", "test_sentences.py", "test_whole_numbers.py", "test_rich_width.py", "test_bundled_cases.py",
    "test_check_bounds.py", "test_explain.py", "test_names.py", "test_positions.py", "test_weights_step.py",
    "test_verify.py",
}


def pytest_configure(config: pytest.Config) -> None:
    """Under ``-m quick``, the property tests that draw thousands of examples draw a tenth
    of them (tests/examples.py): the edit loop's set stays under 2 minutes, and the full
    counts run before a commit and in CI."""
    if config.getoption("markexpr", "") == "quick":
        os.environ["DERIVE_QUICK_TESTS"] = "1"


def pytest_ignore_collect(collection_path, config: pytest.Config) -> bool | None:
    """Under ``-m quick`` the NOT_QUICK files are not even imported (torch, transformers
    and the document tools' helpers take most of a collection's time)."""
    if config.getoption("markexpr", "") == "quick" and collection_path.name in NOT_QUICK:
        return True
    return None


def _derives_crane(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(value == "crane" or (isinstance(value, (tuple, list)) and "crane" in value)
                                    for value in callspec.params.values()):
        return True
    return getattr(item, "originalname", item.name) in CRANE_TESTS


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the crane tests ``slow`` and every other fast test outside NOT_QUICK ``quick``."""
    for item in items:
        if _derives_crane(item) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("slow") is None and item.path.name not in NOT_QUICK:
            item.add_marker(pytest.mark.quick)
