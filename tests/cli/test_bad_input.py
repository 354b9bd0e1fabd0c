"""Bad input every command reads alike: a float option takes finite numbers only, a comma list is a list of
names without an empty one, a param's integer fits in 64 bits, a config names operators that exist and is
UTF-8. Each is one line and exit 2, before anything runs."""

import pytest
from click.testing import CliRunner

from benchctl.cli import cli

RUN = ["run", "py", "cpu", "--op", "lstm_cell", "--quick", "--batch-sizes", "1", "--max-time", "0.2"]
MAXBATCH = ["maxbatch", "lstm_cell", "py", "cpu", "--limit", "4"]


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def writing_to(out, args):
    """`args` with `--out out` where the command writes, so nothing lands in the working folder."""
    return [*args, "--out", str(out)] if args[0] in ("run", "maxbatch", "profile", "selftest", "history") else args


def assert_one_line_usage_error(result, message):
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("args, message", [
    ([*RUN, "--timeout", "nan"], "Invalid value for '--timeout': nan is not a finite number."),
    ([*RUN, "--timeout", "inf"], "Invalid value for '--timeout': inf is not a finite number."),
    ([*RUN, "--timeout", "1e300"], "Invalid value for '--timeout': 1e+300 s is longer than any wait can be "
                                   "(1e+09 s at most)."),
    ([*MAXBATCH, "--timeout", "nan"], "Invalid value for '--timeout': nan is not a finite number."),
    ([*RUN, "--max-time", "nan"], "Invalid value for '--max-time': nan is not a finite number."),
    ([*RUN, "--min-time", "inf"], "Invalid value for '--min-time': inf is not a finite number."),
    ([*RUN, "--min-time", "nan"], "Invalid value for '--min-time': nan is not a finite number."),
    ([*RUN, "--ci-target", "nan"], "Invalid value for '--ci-target': nan is not a finite number."),
    ([*RUN, "--warmup-time", "nan"], "Invalid value for '--warmup-time': nan is not a finite number."),
    ([*RUN, "--settle", "nan"], "Invalid value for '--settle': nan is not a finite number."),
    ([*RUN, "--recheck-above", "nan"], "Invalid value for '--recheck-above': nan is not a finite number."),
    (["compare", ".", ".", "--threshold", "nan"], "Invalid value for '--threshold' / '--min-effect': nan is not"),
    (["history", "--alpha", "nan"], "Invalid value for '--alpha': nan is not a finite number."),
    (["profile", "lstm_cell", "py", "cpu", "--duration", "inf"], "Invalid value for '--duration': inf is not"),
    (["selftest", "--step-timeout", "-inf"], "Invalid value for '--step-timeout': -inf is not a finite number."),
])
def test_a_float_option_takes_finite_numbers_only(args, message, tmp_path):
    assert_one_line_usage_error(invoke(*writing_to(tmp_path, args)), message)


def test_a_float_option_still_says_its_range():
    assert_one_line_usage_error(invoke(*RUN, "--ci-target", "2"), "2.0 is not in the range 0<=x<=1.")
    assert "x>0" in invoke("run", "--help").output


@pytest.mark.parametrize("args, message", [
    (["run", "py", "cpu", "--op", ""], "error: no operator given ('')"),
    (["run", "py", "cpu", "--op", ","], "error: no operator given (',')"),
    (["report", "--op", "lstm_cell,"], "error: an empty operator in 'lstm_cell,'"),
    (["run", "py", "cpu", "--op", "lstm_cell", "--batch-sizes", ""], "error: no batch size given ('')"),
    (["run", "py", "cpu", "--op", "lstm_cell", "--batch-sizes", "1,,2"], "error: an empty batch size in '1,,2'"),
    (["run", "py,,", "cpu", "--op", "lstm_cell"], "error: an empty implementation in 'py,,'"),
    (["run", "py", "cpu,,", "--op", "lstm_cell"], "error: an empty device in 'cpu,,'"),
    (["check", "py", "", "--op", "lstm_cell"], "error: no device given ('')"),
    (["run", "py", "cpu", "--op", "lstm_cell", "--passes", ""], "error: no pass given ('')"),
    (["run", "py", "cpu", "--op", "lstm_cell", "--gpu-kind", "H100,"], "error: an empty GPU kind in 'H100,'"),
])
def test_an_empty_list_or_item_is_an_error_not_everything(args, message, tmp_path):
    assert_one_line_usage_error(invoke(*writing_to(tmp_path, args)), message)


@pytest.mark.parametrize("command", ["run", "check"])
def test_an_integer_param_past_64_bits_is_refused_before_anything_runs(command, tmp_path):
    result = invoke(*writing_to(tmp_path, [command, "py", "cpu", "--op", "lstm_cell", "--param",
                                           "H=99999999999999999999"]))
    assert_one_line_usage_error(result, "error: lstm_cell: param H must fit in a signed 64-bit integer, "
                                        "got 99999999999999999999\n")
    assert list(tmp_path.iterdir()) == []


def test_a_config_s_params_for_an_unknown_operator_are_an_error(tmp_path):
    config = tmp_path / "x.toml"
    config.write_text("[params.nosuchop]\nH = 8\n")
    result = invoke("run", "py", "cpu", "--op", "lstm_cell", "--config", str(config), "--out", str(tmp_path / "o"))
    assert_one_line_usage_error(result, f"error: {config} [params]: unknown operator 'nosuchop'; choose from ")


def test_a_config_s_params_for_an_operator_not_selected_are_left_alone(tmp_path):
    config, blocker = tmp_path / "x.toml", tmp_path / "file"
    config.write_text("[params.hoconv2d]\nH = 8\n")
    blocker.write_text("")
    result = invoke("run", "py", "cpu", "--op", "lstm_cell", "--config", str(config), "--out", str(blocker / "o"))
    assert_one_line_usage_error(result, "error: cannot write results")  # the sweep was made: the config passed


def test_a_config_that_is_not_utf8_is_malformed(tmp_path):
    config = tmp_path / "x.toml"
    config.write_bytes(b"\xff\xfe garbage")
    result = invoke("run", "py", "cpu", "--op", "lstm_cell", "--config", str(config), "--out", str(tmp_path))
    assert_one_line_usage_error(result, f"error: malformed config {config}: 'utf-8' codec can't decode byte 0xff "
                                        "in position 0: invalid start byte")


@pytest.mark.parametrize("args, message", [
    (["run", "py", "cpu", "--repeat", "3"], "error: No such option '--repeat'. Did you mean '--remeasure'? "
                                            "('benchctl run --help' lists what it takes)"),
    (["nosuch"], "error: No such command 'nosuch'. ('benchctl --help' lists what it takes)"),
    (["--nosuch"], "error: No such option '--nosuch'. ('benchctl --help' lists what it takes)"),
    (["run"], "error: Missing argument 'IMPLS'. ('benchctl run --help' lists what it takes)"),
    ([*RUN, "--max-time", "x"], "error: Invalid value for '--max-time': 'x' is not a valid float. ('benchctl run "
                                "--help' lists what it takes)"),
])
def test_a_usage_error_is_one_line_that_says_where_the_help_is(args, message):
    result = CliRunner().invoke(cli, args, prog_name="benchctl")
    assert result.exit_code == 2
    assert result.output.strip() == message
