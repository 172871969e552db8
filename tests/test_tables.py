"""models.tables.read_csv: what pandas would guess or repair is an error naming the line or column."""

import gzip

import pandas as pd
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.tables import check_names, read_csv

GOOD = "a,b,c\n1,2,3\n4,5,6\n"


def _write(tmp_path, text: str, name: str = "t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_good_table_reads_as_pandas_reads_it(tmp_path):
    pd.testing.assert_frame_equal(read_csv(_write(tmp_path, GOOD)), pd.read_csv(_write(tmp_path, GOOD)))


@pytest.mark.parametrize("text, message", [
    ("a,b,c\n1,2,3,4\n4,5,6\n", "line 2: 4 fields, but the header has 3"),           # pandas: 'a' becomes the index
    ("a,b,c\n1,2,3,4\n4,5,6,7\n", "line 2: 4 fields, but the header has 3"),
    ("a,b,c\n1,2,3\n4,5,6,7\n", "line 3: 4 fields, but the header has 3"),
    ("a,b,c\n\n1,2,3\n\n4,5,6,7\n", "line 5: 4 fields"),
    ("a,a,c\n1,2,3\n", "column 'a' appears twice in the header"),                      # pandas: 'a.1'
    ("a,,c\n1,2,3\n", "column 2 has no name"),                                           # pandas: 'Unnamed: 1'
    (",a,b\n0,1,2\n", "column 1 has no name"),
])
def test_what_pandas_would_repair_is_an_error(tmp_path, text, message):
    with pytest.raises(ModelInputError, match=message):
        read_csv(_write(tmp_path, text))


def test_names_are_compared_as_the_caller_strips_them(tmp_path):
    path = _write(tmp_path, "a, a,c\n1,2,3\n")
    assert list(read_csv(path).columns) == ["a", " a", "c"]
    with pytest.raises(ModelInputError, match="column 'a' appears twice"):
        read_csv(path, strip_names=True, skipinitialspace=True)


def test_a_short_row_keeps_its_missing_cells(tmp_path):
    df = read_csv(_write(tmp_path, "a,b,c\n1,2\n4,5,6\n"))
    assert df["c"].isna().tolist() == [True, False]


def test_a_compressed_table_names_the_line_too(tmp_path):
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(b"a,b\n1,2,3\n"))
    with pytest.raises(ModelInputError, match="line 2: 3 fields"):
        read_csv(path)


def test_pandas_reading_errors_pass_through(tmp_path):
    with pytest.raises(pd.errors.EmptyDataError):
        read_csv(_write(tmp_path, ""))


def test_check_names_source_in_the_message():
    with pytest.raises(ModelInputError, match="^x.csv: column 'b' appears twice"):
        check_names(["a", "b", "b"], "x.csv")
