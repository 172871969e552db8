"""whatif.files.file_problem: why a path given as an input file cannot be read as one."""

import os

import pytest

from whatif.files import file_problem


def test_a_readable_file_has_no_problem(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("x")
    assert file_problem(path) is None


@pytest.mark.parametrize("make, expected", [
    (lambda p: None, "no such file"),
    (lambda p: p.mkdir(), "is a directory, not a file"),
    (lambda p: p.symlink_to(p.parent / "nowhere"), "is a dangling symbolic link"),
    (lambda p: os.mkfifo(p), "is not a regular file (a device, FIFO or socket)"),
])
def test_each_problem_in_words(tmp_path, make, expected):
    path = tmp_path / "input"
    make(path)
    assert file_problem(path) == expected


def test_a_file_in_the_middle_of_the_path(tmp_path):
    (tmp_path / "f").write_text("x")
    assert file_problem(tmp_path / "f" / "g.csv").startswith("no such file (a part of the path is a file")


def test_a_name_too_long(tmp_path):
    assert file_problem(tmp_path / ("x" * 5000)).startswith("cannot be opened")
