"""private_dir: no predictable /tmp paths for what root writes and runs (mmaqm-topo
up's run directory, tools/mutants.py's working copy)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import mutants
from mmaqm_exp.private_dir import PrivateDirError, check_private, private_dir

REPO = Path(__file__).resolve().parents[2]
TOPO = REPO / "topologies" / "topos" / "dcbt-dumbbell.json"


def test_a_fresh_directory_is_random_and_0700() -> None:
    a, b = private_dir(prefix="mmaqm-test-"), private_dir(prefix="mmaqm-test-")
    try:
        assert a != b and a.name.startswith("mmaqm-test-")
        assert stat.S_IMODE(a.stat().st_mode) == 0o700
        check_private(a)
    finally:
        a.rmdir()
        b.rmdir()


def test_a_given_path_is_created_0700(tmp_path: Path) -> None:
    path = private_dir(tmp_path / "run" / "here")
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_a_symlink_planted_at_the_path_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = tmp_path / "mmaqm-topo-x"
    link.symlink_to(target)
    with pytest.raises(PrivateDirError, match="a symbolic link"):
        private_dir(link)


def test_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(PrivateDirError, match=r"writable by others \(mode 0777\)"):
        private_dir(shared)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_another_users_directory_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(PrivateDirError, match="owned by uid 65534"):
        private_dir(theirs)


def test_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("")
    with pytest.raises(PrivateDirError, match="not a directory"):
        private_dir(path)


def test_mutants_work_in_a_fresh_private_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(mutants.ENV_WORK_DIR, raising=False)
    root = mutants.use_private_work_dir()
    try:
        assert mutants.WORK == root / "tree"
        assert root != Path("/tmp/mmaqm-mutant")
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
    finally:
        root.rmdir()


def test_mutants_refuse_a_planted_work_dir(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    (tmp_path / "attacker").mkdir()
    planted = tmp_path / "mmaqm-mutant"
    planted.symlink_to(tmp_path / "attacker")
    monkeypatch.setenv(mutants.ENV_WORK_DIR, str(planted))
    with pytest.raises(PrivateDirError, match="a symbolic link"):
        mutants.use_private_work_dir()


def test_mmaqm_topo_up_refuses_a_symlinked_run_dir_before_touching_anything(
        tmp_path: Path) -> None:
    """Exit 2 with the reason; nothing is written into the link's target."""
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "run"
    link.symlink_to(target)
    topo = str(Path(sys.executable).with_name("mmaqm-topo"))
    r = subprocess.run([topo, "up", str(TOPO), "--run-dir", str(link)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"mmaqm-topo: --run-dir: {link}: a symbolic link, not a private directory\n"
    assert list(target.iterdir()) == []
