"""Large plain YAML files are read from libyaml's events, and still name file, document, field and line.

`nodewright.config.plainyaml` builds plain YAML (no anchors, aliases or tags) straight from the
parser's events and finds a field's line only when a problem needs one; anything else goes to
the composing reader, which refuses alias bombs and deep nesting as before. These tests drive
`nodewright plan` and the readers over large files with a fault late in them, and check the
answers are those of the composing reader.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)
from nodewright.config import parse_yaml
from nodewright.config import stream as stream_module
from nodewright.config.plainyaml import read_plain
from nodewright.config.workloads import read_workloads

runner = CliRunner()
TOLERATIONS = 500


def _pod(number: int, operator: str = "Equal") -> str:
    """One Pod manifest with 500 tolerations of its own; the last toleration's operator as given."""
    head = (
        f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p{number}\n  namespace: default\nspec:\n"
        "  containers:\n  - name: app\n    image: app:1\n    resources:\n      requests:\n"
        "        cpu: 100m\n        memory: 128Mi\n  tolerations:\n"
    )
    body = "".join(
        f"  - key: k{number}-{j}\n    operator: {operator if j == TOLERATIONS - 1 else 'Equal'}\n"
        "    value: v\n    effect: NoSchedule\n"
        for j in range(TOLERATIONS)
    )
    return head + body


def _line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line of `text` that contains `needle`."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def _both_readers(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """What `plan` reports for `text` read from events, and read by the composing reader."""

    def report() -> list[str]:
        planned = read_workloads([("f.yaml", text)])
        loaded = parse_yaml(text, "f.yaml")
        return [
            *map(str, planned.problems),
            *map(str, planned.warnings),
            f"{len(planned.pending)} pending",
            *map(str, loaded.problems),
            *(f"{d.key} at {d.line}" for d in loaded.documents),
        ]

    fast = report()
    with monkeypatch.context() as patched:
        patched.setattr(stream_module, "read_plain", lambda _text: None)
        composed = report()
    return fast, composed


def test_an_error_late_in_a_large_file_names_file_document_field_and_line(tmp_path: Path) -> None:
    text = "".join(_pod(i, "Sometimes" if i == 97 else "Equal") for i in range(100))  # 3.5 MB, 200,000 lines
    assert read_plain(text) is not None  # the fast path reads it
    path = tmp_path / "pods.yaml"
    path.write_text(text)

    started = time.process_time()
    result = runner.invoke(app, ["plan", "-f", str(path), "--default-nodepool"])
    seconds = time.process_time() - started

    assert result.exit_code == 1
    line = _line_of(text, "operator: Sometimes")
    assert line > 190_000
    expected = f"{path}:{line}: Pod/p97: spec.tolerations[499].operator: 'Sometimes' is not one of Equal, Exists"
    assert expected in result.output.replace("\n", "")
    assert seconds < 5.0  # the composing reader took about 4 CPU-s to read this file alone


def test_a_duplicate_key_late_in_a_large_file_names_its_line() -> None:
    pods = [_pod(i) for i in range(20)]
    pods[18] = pods[18].replace(
        "    value: v\n    effect: NoSchedule\n", "    value: v\n    value: w\n    effect: NoSchedule\n", 1
    )
    text = "".join(pods)

    planned = read_workloads([("big.yaml", text)])

    [problem] = planned.problems
    assert (problem.document, problem.path, problem.message) == (
        "Pod/p18",
        "spec.tolerations[0].value",
        "duplicate key",
    )
    assert problem.line == _line_of(text, "value: w")


def test_a_syntax_error_late_in_a_large_file_names_its_document_and_line() -> None:
    text = "".join(_pod(i) for i in range(20)) + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: [broken}\n"

    planned = read_workloads([("big.yaml", text)])

    [problem] = planned.problems
    assert problem.document == "document #21"
    assert problem.message.startswith("invalid YAML:")
    assert problem.line == text.count("\n")
    assert len(planned.pending) == 20  # the documents before it were read


POD_ITEM = "- {{apiVersion: v1, kind: Pod, metadata: {{name: p{}}}, spec: {{containers: [{{}}]}}}}\n"
CASES = [
    pytest.param("".join(_pod(i) for i in range(3)), id="plain"),
    pytest.param(_pod(0).replace("    value: v\n", "    value: v\n    value: w\n", 2), id="duplicates"),
    pytest.param(_pod(0).replace("operator: Equal", "operator: Sometimes", 3), id="bad-operators"),
    pytest.param(_pod(0) + "  unknown: 1\n" + _pod(1) + "---\n{a: [}\n", id="warning-then-syntax-error"),
    pytest.param(_pod(0) + "---\n" + "- " * 80 + "x\n", id="deep-but-allowed"),
    pytest.param(_pod(0).replace("cpu: 100m", "cpu: -1") + "---\n---\n...\n" + _pod(1), id="negative-and-empty"),
    pytest.param(
        "kind: List\napiVersion: v1\nitems:\n"
        + "".join(POD_ITEM.format(i) for i in range(3))
        + "- {apiVersion: v1, kind: Service, metadata: {name: s}}\n",
        id="list-with-a-skipped-item",
    ),
    pytest.param(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec: {weight: 0x10, extra: on}\n"
        "---\n  apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: b, labels: {1: 2001-12-14}}\n",
        id="resolved-scalars-and-an-indented-document",
    ),
]  # fmt: skip


@pytest.mark.parametrize("text", CASES)
def test_reading_from_events_reports_what_the_composing_reader_reports(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert read_plain(text) is not None
    fast, composed = _both_readers(text, monkeypatch)
    assert fast == composed


ALIASED = [
    pytest.param("".join(_pod(i) for i in range(3)) + "---\na: &x [1, 2]\nb: *x\n", id="alias-in-the-last-document"),
    pytest.param(_pod(0) + "---\napiVersion: v1\nkind: Pod\nmetadata: !!map {name: tagged}\n", id="explicit-tag"),
    pytest.param(_pod(0) + "---\nbase: &b {cpu: 1}\nmerged: {<<: *b}\n", id="merge-key"),
    pytest.param(_pod(0) + "---\n? [a, b]\n: c\n", id="complex-key"),
]


@pytest.mark.parametrize("text", ALIASED)
def test_anchors_tags_and_complex_keys_go_to_the_composing_reader(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert read_plain(text) is None
    fast, composed = _both_readers(text, monkeypatch)
    assert fast == composed


def test_an_alias_bomb_after_a_large_plain_document_is_still_refused() -> None:
    laughs = "".join(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9) if n else 'lol'}]\n" for n in range(9))
    text = "".join(_pod(i) for i in range(5)) + "---\n" + laughs

    started = time.process_time()
    planned = read_workloads([("bomb.yaml", text)])

    assert time.process_time() - started < 5.0
    assert any("aliases repeat more than" in p.message and p.document == "document #6" for p in planned.problems)
