"""Remake the shipped calibration example: scripted attempts, labelled, and the judge's script.

    python examples/calibration/make_samples.py

What it does, the way a person calibrating a judge would:

1. writes specs/scripts/attempts.yaml: a stochastic agent whose `choices:` are the SUMMARY.md
   texts in `ATTEMPTS`, good and bad, and specs/scripts/summary.yaml, the spec's own script:
   the first, good attempt alone, so the shipped spec passes every time it runs;
2. runs the spec once per planned sample with `atom run --seed S` (S a seed that draws that
   attempt), in a copy of this folder whose spec plays attempts.yaml, and labels each run with `atom label RUN SPEC
   --pass|--fail --note …` (the human's verdict: `ATTEMPTS`' own);
3. writes specs/calibration/summary-for-a-manager/script.yaml: the judge's scripted verdicts,
   one per sample in file order for the spec's own judge and then for the `reworded` arm.
   The judge is made to be wrong where a real one plausibly is (`JUDGE_MISSES`), so the
   agreement is honest, not 100 %;
4. records the calibration cassette: `atom calibrate --arms --record-mode=all` from that
   script, so `atom calibrate` replays offline.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from pytest_atom.gateway import Script, draw_key

HERE = Path(__file__).resolve().parent
SPEC = "summary-for-a-manager"
SPEC_FILE = "specs/summary.atom.yaml"

#: name -> (SUMMARY.md, the human's verdict, the human's note, how many samples)
ATTEMPTS: dict[str, tuple[str, bool, str, int]] = {
    "plain": (
        "An expired TLS certificate caused a 3-hour payments outage on 14 Aug; certificates "
        "now renew automatically. The mobile release slipped two weeks, to 1 Oct, because of "
        "the app-store review.",
        True,
        "both events, accurate, two sentences",
        3,
    ),
    "with-hiring": (
        "Payments were down for 3 hours on 14 Aug (an expired certificate, now renewed "
        "automatically) and the mobile release moved to 1 Oct after the app-store review. Two "
        "backend engineers joined and one frontend role is open.",
        True,
        "two sentences, all from the notes",
        3,
    ),
    "one-sentence": (
        "Q3 had a 3-hour payments outage from an expired certificate, now prevented by "
        "automatic renewal, and a two-week slip of the mobile release to 1 Oct.",
        True,
        "one accurate sentence",
        2,
    ),
    "release-first": (
        "The mobile release is two weeks late and ships 1 Oct, held up by the app-store "
        "review. Separately, payments were down 3 hours on 14 Aug because a TLS certificate "
        "expired; renewal is now automatic.",
        True,
        "accurate, two sentences",
        2,
    ),
    "fragments": (
        "3-hour payments outage on 14 Aug (expired cert, now auto-renewed); mobile release "
        "slipped to 1 Oct (app-store review).",
        True,
        "terse, but one accurate sentence: a manager can read it",
        1,
    ),
    "overclaims": (
        "The 3-hour payments outage on 14 Aug came from an expired TLS certificate and can "
        "never happen again now that renewal is automatic. The mobile app ships 1 Oct, two "
        "weeks late, because of the app-store review.",
        False,
        "'can never happen again' is not in the notes: a promise nobody made",
        2,
    ),
    "wrong-duration": (
        "Payments were down for 5 hours on 14 Aug because of an expired certificate. The "
        "mobile release slipped to 1 Oct.",
        False,
        "the outage lasted 3 hours, not 5",
        2,
    ),
    "no-release": (
        "Payments were down for 3 hours on 14 Aug because a TLS certificate expired; "
        "certificates now renew automatically.",
        False,
        "leaves out the delayed release",
        2,
    ),
    "too-long": (
        "Payments were down for 3 hours on 14 Aug. The cause was an expired TLS certificate. "
        "Certificates now renew automatically. The mobile release slipped to 1 Oct.",
        False,
        "four sentences",
        2,
    ),
    "invents-cost": (
        "A 3-hour payments outage on 14 Aug, caused by an expired certificate, cost about "
        "$200k in lost sales. The mobile release slipped two weeks, to 1 Oct.",
        False,
        "the cost is invented",
        2,
    ),
    "wrong-date": (
        "An expired certificate took payments down for 3 hours on 14 Aug; renewal is now "
        "automatic. The mobile release slipped to 1 Nov, 1 Oct being the original date.",
        False,
        "the release moved to 1 Oct, not 1 Nov",
        2,
    ),
    "copies-notes": (
        "Payments were down for 3 hours on 14 Aug. Cause: an expired TLS certificate. "
        "Certificates now renew automatically. The mobile release slipped two weeks, to "
        "1 Oct, because of the app-store review. Two backend engineers joined; one frontend "
        "role is still open.",
        False,
        "the notes copied, five sentences",
        1,
    ),
}
#: Where the judge is wrong: (attempt, arm) -> the judge's verdict against the human's.
#: The spec's judge takes a promise for a fact and calls a terse sentence "not sentences";
#: the reworded criterion (`arms.yaml`) names promises, so that arm gets `overclaims` right.
JUDGE_MISSES = {("overclaims", "current"), ("fragments", "current"), ("fragments", "reworded")}
REASONS = {
    True: "SUMMARY.md mentions the outage and the release date, in at most two sentences, "
    "and everything it says is in notes.txt.",
    False: "SUMMARY.md does not meet the criterion: {note}.",
}
MISSED = {
    "overclaims": "SUMMARY.md mentions the outage and the 1 Oct release in two sentences; "
    "automatic renewal is in notes.txt.",
    "fragments": "SUMMARY.md is a list of fragments, not sentences a manager reads.",
}


def agent_script() -> dict[str, object]:
    """The stochastic agent: one choice per attempt, equally likely."""
    choices = [{"weight": 1, "turns": _turns(text)} for text, *_ in ATTEMPTS.values()]
    return {"turns": [{"choices": choices}], "reflector": [{"verdict": _VERDICT}]}


def spec_script() -> dict[str, object]:
    """The spec's own agent: the first attempt (a good one), every time."""
    text = next(iter(ATTEMPTS.values()))[0]
    return {"turns": _turns(text), "reflector": [{"verdict": _VERDICT}]}


def _turns(text: str) -> list[dict[str, object]]:
    return [
        {
            "text": "Writing the summary.",
            "tool_use": [
                {
                    "name": "Bash",
                    "input": {
                        "command": f"cat > SUMMARY.md <<'EOF'\n{text}\nEOF",
                        "description": "Write SUMMARY.md",
                    },
                }
            ],
        },
        {"text": "SUMMARY.md is written.\n\nEXIT_LOOP_NOW"},
    ]


#: The run's own verdict (a sample's verdict is the human's, and the judge's is calibrated).
_VERDICT = {
    "score": 0.9,
    "decision": "proceed",
    "criteria": [{"criterion": "the summary", "met": True, "evidence": REASONS[True]}],
    "feedback": "",
}


def seed_for(script: Path, index: int, start: int) -> int:
    """The first seed from `start` whose draw plays choice `index`."""
    loaded = Script.load(script)
    seed = start
    while loaded.play(draw_key(seed, f"summary.atom.yaml::{SPEC}")).picks[0] != index:
        seed += 1
    return seed


def atom(*args: str, cwd: Path, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("atom")), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in ok:
        raise SystemExit(f"atom {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def main() -> None:
    scripts = HERE / "specs" / "scripts"
    script = scripts / "attempts.yaml"
    header = "# The stochastic agent make_samples.py draws the labelled attempts from.\n"
    script.write_text(header + yaml.safe_dump(agent_script(), sort_keys=False, width=100))
    header = "# summary.atom.yaml's own agent, a good attempt: written by make_samples.py.\n"
    own = header + yaml.safe_dump(spec_script(), sort_keys=False, width=100)
    (scripts / "summary.yaml").write_text(own)
    calibration = HERE / "specs" / "calibration" / SPEC
    samples = calibration / "samples"
    shutil.rmtree(samples, ignore_errors=True)
    samples.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="atom-example-") as tmp:
        work = Path(tmp) / "calibration"
        shutil.copytree(HERE, work)
        (work / ".atom").mkdir(exist_ok=True)
        (work / ".atom" / "config.yaml").write_text("keep_runs: 0\n")
        spec = work / SPEC_FILE
        played = "script: scripts/attempts.yaml"
        spec.write_text(spec.read_text().replace("script: scripts/summary.yaml", played))
        number, seed = 0, 1
        for index, (name, (_, met, note, count)) in enumerate(ATTEMPTS.items()):
            for _ in range(count):
                number += 1
                seed = seed_for(script, index, seed + 1)
                atom("run", SPEC_FILE, "--seed", str(seed), cwd=work, ok=(0, 1))  # 1: a bad one
                run = max((work / ".atom" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
                verdict = "--pass" if met else "--fail"
                atom("label", str(run), SPEC_FILE, verdict, "--note", note, cwd=work)
                taken = work / "specs" / "calibration" / SPEC / "samples" / f"{run.name}.yaml"
                shutil.move(taken, samples / f"{number:02d}-{name}.yaml")
    judge_script(calibration / "script.yaml", sorted(samples.glob("*.yaml")))
    (calibration / "cassette.yaml").unlink(missing_ok=True)
    print(atom("calibrate", SPEC_FILE, "--arms", "--record-mode=all", cwd=HERE))


def judge_script(path: Path, files: list[Path]) -> None:
    """The judge's verdicts, in the order `atom calibrate --arms` asks: every sample for the
    spec's own judge, then every sample for the arm."""
    turns = []
    for arm in ("current", "reworded"):
        for file in files:
            name = file.stem.split("-", 1)[1]
            _, met, note, _ = ATTEMPTS[name]
            said = (not met) if (name, arm) in JUDGE_MISSES else met
            evidence = MISSED[name] if said != met else REASONS[met].format(note=note)
            verdict = {
                "score": 0.9 if said else 0.3,
                "decision": "proceed" if said else "refine",
                "criteria": [{"criterion": "the summary", "met": said, "evidence": evidence}],
                "feedback": "" if said else evidence,
            }
            turns.append({"verdict": verdict})
    header = (
        "# The judge's scripted verdicts for `atom calibrate --arms` (make_samples.py):\n"
        "# the spec's own judge on every sample in file order, then the `reworded` arm.\n"
    )
    body = {"turns": [{"text": "unused: calibration runs only the reflector"}], "reflector": turns}
    path.write_text(header + yaml.safe_dump(body, sort_keys=False, width=100))


if __name__ == "__main__":
    main()
