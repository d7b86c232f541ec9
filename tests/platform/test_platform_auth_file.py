"""``--auth`` files go through the hardened YAML reader: every malformed file is one clear
``UserInputError`` naming the file (never a traceback), and the fields are validated as what
they are (names, keys)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dabench.errors import UserInputError
from dabench.platform.admin.auth import load_auth, read_auth_fd

GOOD = """identities:
  - {key: k-teacher-0001, user: teacher, persona: analyst}
  - {key: k-learner-0002, user: learner}
admin_keys: [k-admin-0003]
"""


def _write(tmp_path: Path, data: bytes | str) -> Path:
    path = tmp_path / "auth.yaml"
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def test_a_good_file_loads(tmp_path: Path) -> None:
    auth = load_auth(_write(tmp_path, GOOD))
    assert [i.user for i in auth.identities] == ["teacher", "learner"]
    assert auth.is_admin("k-admin-0003") and not auth.is_admin("k-teacher-0001")


def _deep(depth: int) -> str:
    return "identities: " + "[" * depth + "]" * depth + "\n"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"identities: [\xff\xfe]\n", "not valid UTF-8"),
        (_deep(200), "nested deeper than"),
        (
            "identities: []\nadmin_keys: [k-admin-0001]\nadmin_keys: [k-admin-0002]\n",
            "'admin_keys' is given twice",
        ),
        (
            "identities: []\n" + "".join(f"k{i}: {i}\n" for i in range(120_000)),
            "larger than",
        ),
        (
            "identities: []\nx: {" + ", ".join(f"k{i}: {i}" for i in range(60_000)) + "}\n",
            "YAML nodes",
        ),
        ("identities: [\n", "invalid YAML"),
        ("- just a list\n", "invalid auth file"),
        ("identities: []\nadmin_keys: [k-admin-0001, k-admin-0001]\n", "distinct"),
        (GOOD.replace("user: teacher", "user: '../../etc'"), "identities.0.user"),
        (GOOD.replace("user: teacher", "user: ' '"), "identities.0.user"),
        (GOOD.replace("persona: analyst", "persona: a/b"), "identities.0.persona"),
        (GOOD.replace("k-teacher-0001", "'k teacher 1'"), "identities.0.key"),
        (GOOD.replace("k-teacher-0001", "short"), "identities.0.key"),
        (GOOD.replace("k-teacher-0001", "epk_reserved_prefix"), "minted for episodes"),
        (GOOD.replace("user: learner", "user: teacher"), "one identity"),
        (GOOD + "extra: 1\n", "extra"),
    ],
)
def test_malformed_files_are_one_clear_error(
    tmp_path: Path, data: bytes | str, message: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(UserInputError) as caught:
        load_auth(path)
    text = str(caught.value)
    assert text.startswith(str(path)), text
    assert message in text, text


def test_the_auth_yaml_can_come_through_an_inherited_descriptor() -> None:
    read, write = os.pipe()
    os.write(write, GOOD.encode("utf-8"))
    os.close(write)
    auth = read_auth_fd(read)
    assert auth.identity_for("k-learner-0002") is not None
    with pytest.raises(OSError):
        os.fstat(read)  # read to its end and closed
    read, write = os.pipe()
    os.write(write, b"identities: [\xff]\n")
    os.close(write)
    with pytest.raises(UserInputError, match=r"^--auth-fd \d+:1: not valid UTF-8"):
        read_auth_fd(read)
    with pytest.raises(UserInputError, match="cannot read"):
        read_auth_fd(999)
