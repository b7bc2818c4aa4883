"""A link the agent makes out of its attempt, through the real CLI.

The scripted agent runs ``ln -s <secret outside> agent_leak.txt`` in the non-git fixture
workspace `atom init` lays out; the spec snapshots that file, and the scripted reflector
tries to Read it. Nothing the run and its reports write holds the secret: the reflector's
prompt, its refused Read and transcript, the trace, the HTML report, ``results.json`` and
the JUnit XML with the snapshot's message. The functions
underneath are tested one by one in tests/run/test_links.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers import bash, verdict, write

CANARY = "CANARY-7d2b0a-only-in-the-secret"
SPEC = """\
name: hello
prompt: Create greeting.txt holding hello.
workspace: workspaces/hello
script: scripts/hello.yaml
criteria: [greeting.txt holds hello.]
snapshot: [agent_leak.txt]
"""


def written_files(*folders: Path) -> list[Path]:
    """Every regular file under `folders`, links not followed (the attempt holds the link)."""
    return [p for f in folders for p in f.rglob("*") if p.is_file() and not p.is_symlink()]


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_a_link_out_of_the_attempt_reaches_no_report_prompt_or_transcript(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    secret = write(tmp_path_factory.mktemp("home") / "secret", f"{CANARY}\n")
    project = pytester.path
    write(project / ".atom" / "config.yaml", 'version: "1"\n')
    write(project / "specs" / "workspaces" / "hello" / "README.md", "# hello\n")
    write(project / "specs" / "hello.atom.yaml", SPEC)
    script = {
        "turns": [
            bash(f"ln -s {secret} agent_leak.txt && printf 'hello\\n' > greeting.txt", "Make it."),
            {"text": "Done.\n\nEXIT_LOOP_NOW"},
        ],
        "reflector": [  # a judge that tries the link itself: its Read is refused
            {
                "text": "Let me look.",
                "tool_use": [{"name": "Read", "input": {"file_path": "agent_leak.txt"}}],
            },
            verdict(0.9, criterion="greeting.txt holds hello."),
        ],
    }
    write(project / "specs" / "scripts" / "hello.yaml", yaml.safe_dump(script))
    result = pytester.runpytest(
        "--atom", "specs", "-p", "no:cacheprovider", "--atom-report=reports",
        "--atom-html=report.html", "--junitxml=junit.xml",
    )  # fmt: skip
    result.assert_outcomes(failed=1)  # the snapshot was never taken: its message is shown
    junit = (project / "junit.xml").read_text()
    assert f"symbolic link -&gt; {secret}" in junit or f"symbolic link -> {secret}" in junit
    (run,) = (project / ".atom" / "runs").glob("hello-*")
    assert (run / "attempts" / "a01" / "agent_leak.txt").is_symlink()  # the agent did link
    transcripts = "\n".join(p.read_text() for p in (run / "claude-config").rglob("*.jsonl"))
    assert "symbolic link -> " in transcripts  # the reflector's prompt shows the link
    assert "blockReadsOutsideWorkingDirectories setting blocks reads" in transcripts
    leaked = [
        p
        for p in written_files(run, project / "reports", project / ".atom")
        + [project / "report.html", project / "junit.xml"]
        if CANARY.encode() in p.read_bytes()
    ]
    assert leaked == []
    assert "CANARY" not in result.stdout.str()
