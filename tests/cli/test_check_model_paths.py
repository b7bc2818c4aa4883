"""`atom cassette check` reports the recording machine's paths, not the paths the model wrote.

A path the model wrote (``/tmp/x.py`` in a tool input and the CLI's echo of it, a path in
Anthropic's code-execution container) is the conversation and replays anywhere; a path of
the recording machine (its run folder, a home or temp folder the CLI wrote into the request)
is what normalization exists to mask.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from atom_cli.cassette_cmd import cassette
from pytest_atom.gateway.messages import message, sse_stream
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.placeholders import MachinePaths, model_written
from tests.helpers import old_cassette


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cassette, [str(a) for a in args])


def _tool_use(id_: str, command: str) -> dict[str, object]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command}}


def session_writing(path: str, echo: str) -> Cassette:
    """Release 0.1's cassette, its agent's second call rewritten: it writes `path` itself
    (the model's answer), and the CLI's tool result says `echo` about it."""
    data = old_cassette()
    call = _tool_use("toolu_x", f"cat > {path} <<'EOF'\nprint('hi')\nEOF\npython3 {path}")
    answer = message(
        "msg_x",
        "claude-opus-4-8",
        [{"type": "text", "text": f"Writing {path}."}, call],
        input_tokens=9,
        output_tokens=9,
    )
    data.interactions[2].response = sse_stream(answer).decode()
    body = data.interactions[3].body
    body["messages"][3]["content"] = [{"type": "text", "text": f"Writing {path}."}, call]
    body["messages"][4]["content"] = [
        {"type": "tool_result", "tool_use_id": "toolu_x", "content": echo, "is_error": False}
    ]
    return data


def test_check_passes_a_session_whose_agent_wrote_a_tmp_file(tmp_path: Path) -> None:
    data = session_writing("/tmp/x.py", 'hi\n  File "/tmp/x.py", line 1')
    path = data.save(tmp_path / "tmp.yaml")
    result = run("check", path)
    assert result.exit_code == 0, result.output
    assert result.stdout == "1 cassette checked, 0 findings\n"


def whole_blocks_stream(blocks: list[dict[str, object]]) -> str:
    """An SSE answer whose blocks arrive whole in their content_block_start, as the real API
    sends server tool results."""
    events: list[tuple[str, dict[str, object]]] = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_c"}})
    ]
    for index, block in enumerate(blocks):
        events.append(("content_block_start", {"index": index, "content_block": block}))
        events.append(("content_block_stop", {"index": index}))
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def test_check_passes_code_execution_container_paths_in_the_models_answer(
    tmp_path: Path,
) -> None:
    data = old_cassette()
    blocks: list[dict[str, object]] = [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "bash_code_execution",
            "input": {"command": "ls /tmp/outputs /home/user"},
        },
        {
            "type": "bash_code_execution_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": {
                "type": "bash_code_execution_result",
                "stdout": "/tmp/outputs/chart.png\n/home/user/data.csv\n",
                "stderr": "",
                "return_code": 0,
            },
        },
        {"type": "text", "text": "Saved /tmp/outputs/chart.png. EXIT_LOOP_NOW"},
    ]
    data.interactions[3].response = whole_blocks_stream(blocks)
    path = data.save(tmp_path / "container.yaml")
    result = run("check", path)
    assert result.exit_code == 0, result.output


def test_check_still_reports_the_machines_tmp_path_the_model_did_not_write(
    tmp_path: Path,
) -> None:
    """The CLI's tool result names a temp file of the machine that no answer named."""
    data = session_writing("/tmp/x.py", "wrote /tmp/x.py; log in /tmp/tmpk2j3abcd/run.log")
    path = data.save(tmp_path / "leak.yaml")
    result = run("check", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{path}: interaction 4: raw path in request body, normalization did not happen: "
        "/tmp/tmpk2j3abcd",
        "1 cassette checked, 1 finding",
    ]


def test_a_run_folder_is_the_machines_even_in_the_models_own_words() -> None:
    """A model can only know the run folder from the machine: echoed raw, it is a finding."""
    run_dir = "/tmp/pytest-of-ci/pytest-3/test_x0/.atom/runs/greet-20261126-201500-0a1b2c"
    paths = MachinePaths(model_written([f"cd {run_dir}/workspace"]))
    assert paths.in_text(f"cd {run_dir}/workspace", by_model=True) == [run_dir]
    assert paths.in_text(f"Primary working directory: {run_dir}/workspace") == [run_dir]
    assert paths.in_text("ran /tmp/x.py and /home/alice/notes", by_model=True) == []


def test_the_exemption_is_for_the_whole_path_the_model_wrote() -> None:
    """The model wrote /tmp/abc/x.py; the CLI's own /tmp/abc (its working folder) is still
    the machine's."""
    paths = MachinePaths(model_written([json.dumps({"file_path": "/tmp/abc/x.py"})]))
    assert paths.in_text("File created successfully at: /tmp/abc/x.py") == []
    assert paths.in_text("Primary working directory: /tmp/abc") == ["/tmp/abc"]
