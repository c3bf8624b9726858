"""Tables: number formatting, NaN handling, and the CSV round trip."""
import math

from tally_experiments import report


def test_fmt():
    assert report.fmt(float("nan")) == "-" and report.fmt(None) == "-"
    assert report.fmt(True) == "yes" and report.fmt(7) == "7"
    assert report.fmt(1.23456789) == "1.235" and report.fmt(2.0) == "2"
    assert report.fmt(1.5e-7) == "1.500e-07" and report.fmt(123456.0) == "1.235e+05"


def test_csv_keeps_full_precision_and_blanks_missing_values(tmp_path):
    x = 0.1 + 0.2
    path = report.write_csv(tmp_path / "t.csv", ["a", "b", "c"], [[x, float("nan"), None], [1, "s", 2.5]])
    rows = report.read_csv(path)
    assert float(rows[0]["a"]) == x and rows[0]["b"] == "" and rows[0]["c"] == ""
    assert rows[1] == {"a": "1", "b": "s", "c": "2.5"}


def test_md_table_shape():
    t = report.md_table(["n", "err"], [[16, 1e-4], [32, math.nan]]).splitlines()
    assert t[0] == "| n | err |" and t[1].count("---") == 2
    assert t[2] == "| 16 | 1.000e-04 |" and t[3] == "| 32 | - |"
