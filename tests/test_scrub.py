"""The scrubber is the last line before disk: each test pins one way a secret could leak
(or one way ordinary text could be shredded) with real strings, no mocks."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.scrub import SECRET_HEADERS, SECRET_NAME, Scrubber

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


def test_headers_drop_secret_ones_and_scrub_the_rest() -> None:
    headers = {
        "Authorization": "Bearer x",
        "X-Api-Key": "k",
        "Cookie": "c=1",
        "content-type": "application/json",
        "x-trace": f"id {VALUE}",
    }
    out = Scrubber(env={"GITHUB_TOKEN": VALUE}).scrub_headers(headers)
    assert out == {"content-type": "application/json", "x-trace": "id <SECRET:GITHUB_TOKEN>"}
    assert headers["x-trace"] == f"id {VALUE}"  # the input is not mutated
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


def test_one_megabyte_is_scrubbed_quickly() -> None:
    env = {f"SERVICE_{i}_TOKEN": f"secret-value-{i:04d}-xyz" for i in range(200)}
    scrubber = Scrubber(env=env)
    chunk = (
        '{"role": "user", "content": "lorem ipsum dolor sit amet, <tag> key: '
        "secret-value-0042-xyz and ghp_" + "a1" * 10 + ' Bearer abc123def456"}\n'
    )
    text = chunk * (1_000_000 // len(chunk))
    start = time.perf_counter()
    out = scrubber.scrub(text)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, elapsed
    lines = text.count("\n")
    assert out.count("<SECRET:SERVICE_42_TOKEN>") == lines
    assert out.count("<SECRET:REDACTED>") == 2 * lines
