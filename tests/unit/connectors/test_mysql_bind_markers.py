"""Parameter markers in MySQL text are bound only where they are bare tokens."""
from connectors.mysql.source import bind_markers


def test_backquoted_names_with_doubled_backquotes_are_read_as_names() -> None:
    sql = "SELECT `0\n````1` FROM `a``b` WHERE `e` = __fedgate_param_1__"
    assert bind_markers(sql, [7]) == "SELECT `0\n````1` FROM `a``b` WHERE `e` = 7"


def test_a_marker_spelled_inside_a_name_or_a_string_stays_as_written() -> None:
    sql = ("SELECT `__fedgate_param_1__` FROM t "
           "WHERE s = '__fedgate_param_1__' AND x = __fedgate_param_2__")
    assert bind_markers(sql, [7, "it's"]) == (
        "SELECT `__fedgate_param_1__` FROM t "
        "WHERE s = '__fedgate_param_1__' AND x = 'it''s'")


def test_without_parameters_the_text_is_unchanged() -> None:
    assert bind_markers("SELECT `x``` FROM t", []) == "SELECT `x``` FROM t"
