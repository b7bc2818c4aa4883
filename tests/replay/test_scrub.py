"""The scrubber is the last line before disk: each test pins one way a secret could leak
(or one way ordinary text could be shredded) with real strings, no mocks."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.replay.scrub import SECRET_HEADERS, SECRET_NAME, Scrubber
from tests.helpers import REPO

VALUE = "hunter2-correct-horse"  # no known token shape: only the env pass can catch it


def test_secret_name_matches_secret_looking_names_only() -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "MY_SECRET",
        "db_passwd",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "proxy_auth",
    ):
        assert SECRET_NAME.search(name), name
    for name in ("HOME", "PATH", "EDITOR", "LANG", "TERM"):
        assert not SECRET_NAME.search(name), name


def test_env_value_in_plain_text_becomes_named_placeholder() -> None:
    out = Scrubber(env={"GITHUB_TOKEN": VALUE}).scrub(f"cloning with {VALUE} now")
    assert out == "cloning with <SECRET:GITHUB_TOKEN> now"


def test_default_env_is_os_environ_read_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ATOM_TEST_TOKEN", VALUE)
    scrubber = Scrubber()
    monkeypatch.setenv("PYTEST_ATOM_LATER_TOKEN", "set-after-construction")
    out = scrubber.scrub(f"{VALUE} set-after-construction")
    assert out == "<SECRET:PYTEST_ATOM_TEST_TOKEN> set-after-construction"


@pytest.mark.parametrize("value", ['pa"ss\\word-12345', "pässwörd-ünïcode", VALUE])
def test_env_value_inside_json_body_is_replaced(value: str) -> None:
    body = json.dumps({"model": "claude", "password": value, "note": f"x {value} y"})
    assert value not in body or json.dumps(value)[1:-1] == value  # the escaped form is what leaks
    out = Scrubber(env={"DB_PASSWORD": value}).scrub(body)
    assert json.dumps(value)[1:-1] not in out
    assert json.loads(out) == {
        "model": "claude",
        "password": "<SECRET:DB_PASSWORD>",
        "note": "x <SECRET:DB_PASSWORD> y",
    }


def test_value_of_non_secret_name_is_kept() -> None:
    text = f"theme {VALUE}"
    assert Scrubber(env={"EDITOR_THEME": VALUE}).scrub(text) == text


def test_short_values_are_kept_unless_min_length_allows_them() -> None:
    text = "id abc1234 ok"
    assert Scrubber(env={"API_KEY": "abc1234"}).scrub(text) == text
    assert (
        Scrubber(env={"API_KEY": "abc1234"}, min_length=4).scrub(text) == "id <SECRET:API_KEY> ok"
    )


def test_trivial_values_and_existing_paths_are_kept(tmp_path: Path) -> None:
    env = {
        "USE_AUTH": "true",
        "AUTH_OFF": "0",
        "SSH_AUTH_SOCK": str(tmp_path),
        "SIGNING_KEY": "/9j4Kd+xQ/ab0Zr",
    }  # base64 starting with "/" names no file
    scrubber = Scrubber(env=env, min_length=1)
    out = scrubber.scrub(f"true 0 {tmp_path} /9j4Kd+xQ/ab0Zr")
    assert out == f"true 0 {tmp_path} <SECRET:SIGNING_KEY>"


def test_longest_value_is_replaced_whole() -> None:
    env = {"ABC_TOKEN": "prefix-secret-1", "XYZ_TOKEN": "prefix-secret-1-and-more"}
    out = Scrubber(env=env).scrub("a=prefix-secret-1 x=prefix-secret-1-and-more")
    assert out == "a=<SECRET:ABC_TOKEN> x=<SECRET:XYZ_TOKEN>"


def test_values_sharing_a_prefix_match_longest_then_fall_back() -> None:
    env = {
        "A_KEY": "abcdefgh",
        "B_KEY": "abcdefgh-long-one",
        "C_KEY": "abcdefgh12",
        "D_KEY": "abcdefgh2x",
    }
    out = Scrubber(env=env).scrub("abcdefgh-long-one abcdefgh-long-xx abcdefgh123 abcdefgh2x")
    assert out == "<SECRET:B_KEY> <SECRET:A_KEY>-long-xx <SECRET:C_KEY>3 <SECRET:D_KEY>"


def test_extra_values_are_scrubbed_and_win_over_env() -> None:
    scrubber = Scrubber(
        env={"SOME_KEY": VALUE}, extra={"explicit key": VALUE, "K": "other-value-9"}
    )
    assert scrubber.scrub(f"{VALUE} other-value-9") == "<SECRET:explicit_key> <SECRET:K>"


SHAPES = [
    "sk-ant-api03-fakeAbCdEf_12-345678",
    "sk-" + "A1b2C3d4E5" * 3,
    "sk-proj-" + "Ab_1-" * 6,
    "ghp_" + "a1B2c3D4e5" * 3,
    "gho_" + "Z9" * 12,
    "github_pat_11AAAA_" + "b2" * 15,
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-1234567890-abcdefGHIJ",
]


@pytest.mark.parametrize("token", SHAPES)
def test_token_shapes_are_redacted_without_env(token: str) -> None:
    scrubber = Scrubber(env={})
    out = scrubber.scrub(f'key: {token}, "{token}"\n')
    assert out == 'key: <SECRET:REDACTED>, "<SECRET:REDACTED>"\n'
    assert scrubber.contains_secret(token) == ["REDACTED"]


@pytest.mark.parametrize(
    "text",
    [
        "risk-management-frameworks-for-everyone",  # "sk-" inside a word
        "task-abcdefghijklmnopqrstuvwxyz",
        "sk-short",
        "ghp_short",
        "AKIA-not-a-key",
        "xoxb-short",
        "Bearer authentication is described in RFC 6750",
    ],
)
def test_near_misses_are_kept(text: str) -> None:
    assert Scrubber(env={}).scrub(text) == text


def test_bearer_keeps_the_scheme_word() -> None:
    out = Scrubber(env={}).scrub("Authorization: Bearer abc123def456.ghi-jkl\nnext")
    assert out == "Authorization: Bearer <SECRET:REDACTED>\nnext"
    assert Scrubber(env={}).scrub("bearer  " + "x" * 24) == "bearer  <SECRET:REDACTED>"


def test_pem_private_key_block_is_redacted_raw_and_json_escaped() -> None:
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nq0Zx+/abc==\n"
        "-----END RSA PRIVATE KEY-----"
    )
    scrubber = Scrubber(env={})
    assert scrubber.scrub(f"before\n{pem}\nafter") == "before\n<SECRET:REDACTED>\nafter"
    out = scrubber.scrub(json.dumps({"file": pem}))
    assert json.loads(out) == {"file": "<SECRET:REDACTED>"}


def test_the_credential_headers_are_never_stored() -> None:
    assert {"authorization", "x-api-key", "cookie", "set-cookie"} <= SECRET_HEADERS


def test_scrub_obj_is_a_deep_scrubbed_copy() -> None:
    obj: dict[str, Any] = {
        "a": [1, 2.5, None, True, {"b": (VALUE, "plain")}],
        VALUE: {"c": f"x{VALUE}"},
    }
    out = Scrubber(env={"MY_SECRET": VALUE}).scrub_obj(obj)
    p = "<SECRET:MY_SECRET>"
    assert out == {"a": [1, 2.5, None, True, {"b": (p, "plain")}], p: {"c": f"x{p}"}}
    assert obj["a"][4] == {"b": (VALUE, "plain")}  # the input is not mutated


def test_contains_secret_names_each_secret_once() -> None:
    scrubber = Scrubber(env={"GITHUB_TOKEN": VALUE})
    text = f"{VALUE} AKIAIOSFODNN7EXAMPLE {VALUE}"
    assert scrubber.contains_secret(text) == ["GITHUB_TOKEN", "REDACTED"]
    assert scrubber.contains_secret("nothing to see") == []
    assert scrubber.contains_secret(scrubber.scrub(text)) == []


def test_placeholders_are_never_rescrubbed_or_flagged() -> None:
    scrubber = Scrubber(env={"WORD_TOKEN": "SECRET:REDACTED", "NAME_KEY": "GITHUB_TOKEN"})
    text = "<SECRET:REDACTED> <SECRET:GITHUB_TOKEN>"
    assert scrubber.scrub(text) == text
    assert scrubber.contains_secret(text) == []
    assert scrubber.scrub("GITHUB_TOKEN") == "<SECRET:NAME_KEY>"  # outside a placeholder it counts


def test_scrub_is_idempotent() -> None:
    scrubber = Scrubber(env={"GITHUB_TOKEN": VALUE, "ABC_TOKEN": "Bearer-ish-value"})
    text = f"{VALUE} Bearer {'z9' * 10} Bearer-ish-value {SHAPES[0]} {json.dumps(VALUE)}"
    once = scrubber.scrub(text)
    assert once != text
    assert scrubber.scrub(once) == once


def test_repr_shows_only_the_count() -> None:
    scrubber = Scrubber(env={"GITHUB_TOKEN": VALUE, "DB_PASSWORD": "another-secret-value"})
    for shown in (repr(scrubber), str(scrubber)):
        assert VALUE not in shown and "another-secret-value" not in shown
        assert "2" in shown


def test_one_megabyte_is_scrubbed_whole() -> None:
    """Every secret of a megabyte of lines (how fast: benchmarks/scrub.py, not a timed test)."""
    env = {f"SERVICE_{i}_TOKEN": f"secret-value-{i:04d}-xyz" for i in range(200)}
    scrubber = Scrubber(env=env)
    chunk = (
        '{"role": "user", "content": "lorem ipsum dolor sit amet, <tag> key: '
        "secret-value-0042-xyz and ghp_" + "a1" * 10 + ' Bearer abc123def456"}\n'
    )
    text = chunk * (1_000_000 // len(chunk))
    out = scrubber.scrub(text)
    lines = text.count("\n")
    assert out.count("<SECRET:SERVICE_42_TOKEN>") == lines
    assert out.count("<SECRET:REDACTED>") == 2 * lines


# --- Secrets in content: detect-secrets' keyword, entropy and provider plugins ---------------

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example value
RANDOM = "Zq8xT4vLp9rWk2MbN7cY3hJ6gF1d"  # mixed letters and digits, no known shape


def _jwt() -> str:
    part = [
        base64.urlsafe_b64encode(json.dumps(p).encode()).decode().rstrip("=")
        for p in ({"alg": "HS256", "typ": "JWT"}, {"sub": "1234567890", "name": "canary"})
    ]
    return f"{part[0]}.{part[1]}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),  # an env file
        (f"export AWS_SECRET_ACCESS_KEY='{AWS_SECRET}'", AWS_SECRET),
        ("password: hunter2-horse", "hunter2-horse"),  # YAML
        ('db_password = "S3cr3t!pass"', "S3cr3t!pass"),  # code
        ('{"api_key": "abc123def456ghi"}', "abc123def456ghi"),  # JSON
        (f"MY_SERVICE_TOKEN={RANDOM}", RANDOM),  # unlisted name, random value
        (f"auth_token: {RANDOM}  # rotated monthly", RANDOM),
        (f"Authorization header was {_jwt()} today", _jwt()),  # provider: JWT, whole
        ("stripe: sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
        ("slack " + "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", None),
        ("gitlab glpat-" + "xY9wV8uT7sR6qP5oN4mL", None),
    ],
)
def test_secrets_in_content_are_redacted_plain_and_json_escaped(
    line: str, secret: str | None
) -> None:
    scrubber = Scrubber(env={})
    secret = secret or line.split()[-1]
    for text in (
        f"$ cat secrets.env\n{line}\nnext line",
        json.dumps({"content": f"$ cat secrets.env\n{line}\n"}),  # a request body
        json.dumps({"partial_json": json.dumps({"new_string": line})}),  # escaped twice
    ):
        out = scrubber.scrub(text)
        for form in (secret, json.dumps(secret)[1:-1], json.dumps(json.dumps(secret))[1:-1]):
            assert form not in out, (line, out)
        assert "<SECRET:REDACTED>" in out
        assert scrubber.contains_secret(text) and scrubber.contains_secret(out) == []
        assert scrubber.scrub(out) == out


def test_a_found_value_is_redacted_wherever_it_recurs_in_the_text() -> None:
    text = f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\nThe key {AWS_SECRET} is set; x{AWS_SECRET}y"
    out = Scrubber(env={}).scrub(text)
    assert out == (
        "AWS_SECRET_ACCESS_KEY=<SECRET:REDACTED>\n"
        "The key <SECRET:REDACTED> is set; x<SECRET:REDACTED>y"
    )


def test_scrub_obj_sees_key_value_pairs_and_redacts_a_value_in_every_string() -> None:
    body = {
        "config": {"password": "pa55-w0rd-xyz", "user": "ada"},
        "messages": [
            {"content": f"MY_SERVICE_TOKEN={RANDOM}"},
            {"content": f"echoed: {RANDOM} and pa55-w0rd-xyz"},
        ],
    }
    out = Scrubber(env={}).scrub_obj(body)
    assert out == {
        "config": {"password": "<SECRET:REDACTED>", "user": "ada"},
        "messages": [
            {"content": "MY_SERVICE_TOKEN=<SECRET:REDACTED>"},
            {"content": "echoed: <SECRET:REDACTED> and <SECRET:REDACTED>"},
        ],
    }
    assert Scrubber(env={}).scrub_obj(out) == out


def test_private_keys_are_redacted_whole_even_when_cut_off() -> None:
    body = "MIIEowIBAAKCAQEA7q0Zx" + "Ab1+/" * 8
    head = f"$ head -3 id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n{body}\n$ ls"
    out = Scrubber(env={}).scrub(head)
    assert out == "$ head -3 id_rsa\n<SECRET:REDACTED>\n$ ls"
    putty = f"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPrivate-Lines: 1\n{body}\n"
    assert Scrubber(env={}).scrub(json.dumps(putty)) == '"<SECRET:REDACTED>\\n"'


def test_basic_auth_password_in_a_url_is_redacted_in_place() -> None:
    out = Scrubber(env={}).scrub("DATABASE_URL=postgres://app:pw42@db:5432/app and more")
    assert out == "DATABASE_URL=postgres://app:<SECRET:REDACTED>@db:5432/app and more"


@pytest.mark.parametrize(
    "text",
    [
        "def login(password: str) -> bool:",
        'api_key = os.environ["API_KEY"]',
        "token = get_token(user)",
        "key = value",
        "hkey_mod = win32con",  # a reference to another name, in code
        "RegEnumKey = win32api.RegEnumKey",
        "secret_key: ${SECRET_KEY}",
        "password: <SECRET:DB_PASSWORD>",
        "password: required for login, see the docs",
        '"input_tokens": 1234, "output_tokens": 56, "cache_read_input_tokens": 0',
        'OAUTH_API_BETA_HEADER = "oauth-2025-04-20"',  # not random enough for a token
        '"author": "Jane Doe <jane@example.com>"',
        '"session_token": "123e4567-e89b-12d3-a456-426614174000"',  # a UUID
        '"signature": "' + "EqQBCkgIBBABGAIqQK" * 40 + '"',  # a thinking signature
        '"tool_use_id": "toolu_01A09q90qw90lq917835lq9"',
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
        "sha256:4ab051e0c02cd574 and key: settings.api_key",
        "Bearer authentication is described in RFC 6750; the secret: keep it safe",
    ],
)
def test_ordinary_code_and_output_are_kept(text: str) -> None:
    scrubber = Scrubber(env={})
    assert scrubber.scrub(text) == text
    assert scrubber.scrub_obj({"password": "required", "text": text}) == {
        "password": "required",
        "text": text,
    }


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(data, list):
        for item in data:
            yield from _strings(item)


def test_shipped_fixtures_hold_nothing_the_scrubber_would_redact() -> None:
    """The false-positive measure: every string of every shipped cassette, and every file
    of the fixture workspaces, goes through the scrubber; none may change (none holds a
    secret)."""
    cassettes = [
        *REPO.glob("fixtures/specs/cassettes/**/*.yaml"),
        *REPO.glob("examples/*/specs/cassettes/**/*.yaml"),
    ]
    workspaces = [
        p
        for root in (
            *REPO.glob("fixtures/specs/workspaces"),
            *REPO.glob("examples/*/specs/workspaces"),
        )
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    assert len(cassettes) >= 4 and len(workspaces) >= 5
    texts = [s for c in cassettes for s in _strings(yaml.safe_load(c.read_text(encoding="utf-8")))]
    texts += [p.read_text(encoding="utf-8") for p in workspaces]
    texts += [c.read_text(encoding="utf-8") for c in cassettes]  # the files as written, too
    scrubber = Scrubber(env={})
    changed = [text[:200] for text in texts if scrubber.scrub(text) != text]
    assert len(texts) > 600
    assert changed == []


def test_scrub_tree_rewrites_only_files_with_secrets_and_follows_no_link(tmp_path: Path) -> None:
    tree = tmp_path / "claude-config"
    project = tree / "projects" / "-run-a01"
    project.mkdir(parents=True)
    transcript = project / "session.jsonl"
    lines = [
        {"type": "user", "toolUseResult": {"stdout": f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"}},
        {"type": "assistant", "text": f"env says {VALUE}; the key again: {AWS_SECRET}"},
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    transcript.chmod(0o600)
    clean = tree / ".claude.json"
    clean.write_text('{"firstStartTime": "2026-01-01"}\n')
    clean_mtime = clean.stat().st_mtime_ns
    binary = tree / "blob.bin"
    binary.write_bytes(b"\xff\xfe" + VALUE.encode() + b"\x00\x80")
    outside = tmp_path / "outside.txt"
    outside.write_text(VALUE)
    (tree / "link.txt").symlink_to(outside)

    changed = Scrubber(env={"MY_SERVICE_TOKEN": VALUE}).scrub_tree(tree)

    assert sorted(changed) == sorted([transcript, binary])
    text = transcript.read_text()
    assert AWS_SECRET not in text and VALUE not in text
    assert [json.loads(line) for line in text.splitlines()] == [
        {"type": "user", "toolUseResult": {"stdout": "AWS_SECRET_ACCESS_KEY=<SECRET:REDACTED>\n"}},
        {
            "type": "assistant",
            "text": "env says <SECRET:MY_SERVICE_TOKEN>; the key again: <SECRET:REDACTED>",
        },
    ]
    assert transcript.stat().st_mode & 0o777 == 0o600
    assert binary.read_bytes() == b"\xff\xfe<SECRET:MY_SERVICE_TOKEN>\x00\x80"
    assert clean.stat().st_mtime_ns == clean_mtime  # untouched, not rewritten
    assert outside.read_text() == VALUE  # a link out of the tree is not followed
    assert not list(tree.rglob("*.tmp"))
    assert Scrubber(env={}).scrub_tree(tmp_path / "missing") == []


def test_scrub_tree_takes_several_folders_as_one_object(tmp_path: Path) -> None:
    """A run's `claude-config/` and `home/`: a secret assigned in one is redacted in both."""
    log = tmp_path / "home" / ".npm" / "_logs" / "debug.log"
    log.parent.mkdir(parents=True)
    log.write_text(f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n")
    transcript = tmp_path / "claude-config" / "session.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(json.dumps({"text": f"the bare value {AWS_SECRET}"}) + "\n")

    changed = Scrubber(env={}).scrub_tree(tmp_path / "claude-config", tmp_path / "home")

    assert sorted(changed) == sorted([log, transcript])
    assert AWS_SECRET not in log.read_text() + transcript.read_text()


def test_a_value_found_once_is_redacted_in_later_texts_but_not_in_later_objects() -> None:
    scrubber = Scrubber(env={})
    scrubber.scrub_obj({"content": f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}"})  # a request
    answer = f"Found it: {AWS_SECRET}."
    assert scrubber.scrub(answer) == "Found it: <SECRET:REDACTED>."  # its answer
    assert scrubber.contains_secret(answer) == ["REDACTED"]
    # A request body is scrubbed from its own content only: replay matches on it.
    assert scrubber.scrub_obj({"content": answer}) == {"content": answer}
    assert Scrubber(env={}).scrub(answer) == answer  # nothing learned, nothing known
