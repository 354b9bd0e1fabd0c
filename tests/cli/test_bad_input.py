"""Bad input every command reads alike: a float option takes finite numbers only, a comma list is a list of
names without an empty one, a param's integer fits in 64 bits, a config names operators that exist and is
UTF-8, a count or size past what the machine can take is refused, two options that cannot go together are
refused rather than one ignored, a name is quoted. Each is one line and exit 2, before anything runs; a
damaged run folder beside the ones asked for is read without what is damaged."""

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
    (["check", "py", "cpu", "--dtype", "half"], "error: unknown dtype 'half'; choose from float32, float64, float16, "
                                                "bfloat16"),
])
def test_a_usage_error_is_one_line_that_says_where_the_help_is(args, message):
    result = CliRunner().invoke(cli, args, prog_name="benchctl")
    assert result.exit_code == 2
    assert result.output.strip() == message


def assert_one_line(result, code, message):
    assert result.exit_code == code, result.output
    assert message in result.output and result.output.strip().count("\n") == 0, result.output


def test_an_operator_file_that_exits_as_it_is_imported_is_a_broken_file_not_the_end(tmp_path, monkeypatch):
    from benchctl.ops import registry

    monkeypatch.setattr(registry, "_LOAD_ERRORS", {})  # this process's later commands load other files
    (tmp_path / "quits.py").write_text("import sys\nsys.exit(3)\n")
    listed = invoke("list", "--ops-dir", str(tmp_path))
    assert listed.exit_code == 0 and "SystemExit" in listed.output, listed.output
    said = f"error: operator file {tmp_path / 'quits.py'} failed to import: SystemExit at line 2: 3"
    assert_one_line(invoke("check", "py", "cpu", "--op", "quits", "--ops-dir", str(tmp_path)), 2, said)
    assert_one_line(invoke("profile", "quits", "py", "cpu", "--ops-dir", str(tmp_path)), 2, said)


CHECK, PROFILE = ["check", "py", "cpu", "--op", "lstm_cell"], ["profile", "lstm_cell", "py", "cpu"]


@pytest.mark.parametrize("args, key", [(CHECK, "H"), (CHECK, "batch_size"), (PROFILE, "H"), (PROFILE, "batch_size"),
                                       (RUN, "H"), (RUN[:-4], "batch_size"), (MAXBATCH, "H")])
def test_null_is_refused_where_the_param_s_default_is_not_null(args, key, tmp_path):
    result = invoke(*writing_to(tmp_path / "out", [*args, "--param", f"{key}=null"]))
    assert_one_line_usage_error(result, f"error: lstm_cell: param {key} cannot be null (only a param whose "
                                        "default is null can be unset), got null")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("toml, message", [
    ("[timing]\nmin_time = nan\n", "[timing] min_time must be a non-negative finite number, got nan"),
    ("[timing]\nmax_time = inf\n", "[timing] max_time must be a non-negative finite number, got inf"),
    ("[timing]\nmin_samples = nan\n", "[timing] min_samples must be a non-negative whole number, got nan"),
    ("[timing]\nwarmup = 1.5\n", "[timing] warmup must be a non-negative whole number, got 1.5"),
    ("[timing]\nmax_samples = true\n", "[timing] max_samples must be a non-negative whole number, got True"),
    ("[timing]\nci_target = 5\n", "[timing] ci_target must be a fraction, at most 1, got 5"),
    ('targets = "cell"\n', "[targets] must be a table: operator = [target, ...]"),
    ("[targets]\nlstm_cell = [1]\n", "[targets]: lstm_cell must be a list of strings, got [1]"),
])
def test_a_config_s_timing_and_targets_are_checked_before_anything_runs(toml, message, tmp_path):
    config = tmp_path / "x.toml"
    config.write_text(toml)
    result = invoke(*RUN, "--config", str(config), "--out", str(tmp_path / "out"))
    assert_one_line_usage_error(result, f"error: {config} {message}")


def test_a_config_s_target_may_be_one_name_as_its_other_lists_may(tmp_path):
    config, blocker = tmp_path / "x.toml", tmp_path / "file"
    config.write_text('[targets]\nlstm_cell = "cell"\n')
    blocker.write_text("")
    result = invoke(*RUN, "--config", str(config), "--out", str(blocker / "o"))
    assert_one_line_usage_error(result, "error: cannot write results")  # the sweep was made: the target passed


@pytest.mark.parametrize("args", [RUN, [*PROFILE, "--batch-size", "1"]])
def test_batch_sizes_given_twice_are_refused_not_one_of_them_ignored(args, tmp_path):
    result = invoke(*args, "--param", "batch_size=2", "--out", str(tmp_path / "out"))
    assert_one_line_usage_error(result, "error: --param batch_size and the batch size option (--batch-sizes, "
                                        "profile's --batch-size) both set batch_size: give one of them")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, message", [
    (["--threads", str(2**31)], f"Invalid value for '--threads': {2**31} is not in the range 1<=x<=2147483647"),
    (["--threads", str(2**31), "--in-process"], "Invalid value for '--threads': 2147483648 is not in the range"),
    (["--rounds", "99999999999999999999"], "error: --rounds 99999999999999999999 in each of 1 process(es) is "
                                           "99999999999999999999 rounds of every cell, more than 500: each takes 2 "
                                           "samples of a pass at least, past max_samples (1000)"),
    (["--rounds", "3", "--processes", "200"], "is 600 rounds of every cell, more than 500"),
    (["--address", "auto"], "error: --address is for --executor ray, not local: add --executor ray, or leave "
                            "--address out"),
    (["--gpu-kind", "H100", "--executor", "pool"], "error: --gpu-kind is for --executor ray, not pool"),
    (["--in-process", "--fresh-worker"], "error: --fresh-worker starts a worker process for every cell: leave out "
                                         "--in-process"),
])
def test_run_settings_that_cannot_be_are_refused_before_a_run_folder_is_made(extra, message, tmp_path):
    result = invoke(*RUN, *extra, "--out", str(tmp_path))
    assert_one_line_usage_error(result, message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("extra, message", [
    (["--mem-limit", ""], "error: not a size: '' (use e.g. 512M or 2G)"),
    (["--mem-limit", "99999999999999999999T"], "error: --mem-limit 99999999999999999999T is more than a worker can "
                                               "be limited to (4 EiB)"),
    (["--param", "batch_size=5"], "error: maxbatch searches batch_size itself: give --start and --limit, not "
                                  "--param batch_size"),
    (["--start", str(2**63)], f"Invalid value for '--start': {2**63} is not in the range 1<=x<={2**63 - 1}"),
    (["--limit", str(2**63)], f"Invalid value for '--limit': {2**63} is not in the range 1<=x<={2**63 - 1}"),
])
def test_maxbatch_refuses_a_memory_limit_or_batch_size_it_would_ignore_or_fail_on(extra, message, tmp_path):
    result = invoke(*MAXBATCH, *extra, "--out", str(tmp_path / "out"))
    assert_one_line_usage_error(result, message)
    assert not (tmp_path / "out").exists()


@pytest.fixture
def a_run(tmp_path):
    from tests.cli.test_report_cli import row, write_run

    return write_run(tmp_path / "results", "20240101-000000-aaaaaa", [row("py", 1e-3, 1), row("cpp", 1e-3, 2)])


@pytest.mark.parametrize("command", ["report", "history"])
def test_a_page_that_cannot_be_written_is_one_line(command, a_run, tmp_path):
    (tmp_path / "file").write_text("")
    result = invoke(command, str(a_run), "--out", str(tmp_path / "file" / "page"))
    assert_one_line_usage_error(result, f"error: cannot write results to {tmp_path / 'file' / 'page'}: Not a directory")


def test_bisect_refuses_a_work_folder_it_cannot_write_before_it_checks_anything_out(tmp_path):
    import subprocess

    repo = tmp_path / "repo"
    for args in (["init", "-q", str(repo)], *[["-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", "commit",
                                              "-q", "--allow-empty", "-m", m] for m in ("one", "two")]):
        subprocess.run(["git", *args], check=True)
    (tmp_path / "file").write_text("")
    result = invoke("bisect", "HEAD~1", "HEAD", "--op", "lstm_cell", "--impl", "py", "--repo", str(repo),
                    "--work", str(tmp_path / "file" / "work"))
    assert result.exit_code == 2 and "error: cannot write results to" in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args, message", [
    (["--device", ""], "error: no device given ('')"),
    (["--pass", ""], "error: no pass given ('')"),
    (["--impl", "py,"], "error: an empty implementation in 'py,'"),
    (["--device", "gpu"], "error: no timed cell has --device 'cuda' (it could match cpu)"),
])
def test_history_s_filters_are_words_as_run_s_are(args, message, a_run):
    assert_one_line_usage_error(invoke("history", str(a_run), *args), message)


@pytest.mark.parametrize("args", [["--device", "cpu,gpu"], ["--device", "all"], ["--impl", "py,cpp"],
                                  ["--pass", "forward,backward"]])
def test_history_s_filters_take_comma_lists(args, a_run, tmp_path):
    result = invoke("history", str(a_run), *args, "--out", str(tmp_path / "page"))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args, message", [
    (["build", "a\nb"], "error: no extension sources for 'a\\nb'; choose from:"),
    ([*RUN, "--pair-with", "a\nb"], "error: --pair-with 'a\\nb': it is not among the implementations run here"),
    ([*RUN, "--pair-with", ""], "error: --pair-with '': it is not among the implementations run here"),
    (["list", "--ops-dir", "a\nb"], "error: operators folder not found: '"),
])
def test_a_name_with_a_newline_or_none_at_all_is_quoted_in_its_one_line(args, message, tmp_path):
    assert_one_line_usage_error(invoke(*writing_to(tmp_path, args)), message)
    assert invoke(*writing_to(tmp_path, args)).output.strip().count("\n") == 0


@pytest.mark.parametrize("args, message", [
    (["--op", "a\nb"], "error: no results for 'a\\nb'; these results have: hoconv2d"),
    (["--baseline", "a\nb"], "error: --baseline 'a\\nb': no results for implementation 'a\\nb'"),
    (["--baseline", ""], "error: --baseline '': expected OP=IMPL or IMPL"),
])
def test_report_quotes_the_names_it_has_no_results_for(args, message, a_run, tmp_path):
    assert_one_line(invoke("report", str(a_run), *args, "--out", str(tmp_path / "page")), 2, message)


def test_a_run_whose_metadata_is_not_an_object_is_read_without_it(a_run, tmp_path):
    from tests.cli.test_report_cli import row, write_run

    other = write_run(tmp_path / "results", "20240102-000000-bbbbbb", [row("py", 1e-3, 3), row("cpp", 1e-3, 4)])
    (other / "_run.json").write_text("[]")
    said = (f"warning: cannot read the metadata of {other}: {other / '_run.json'} holds a JSON list, not a run's "
            "metadata")
    for args in (["compare", str(a_run), str(other)], ["report", str(a_run), "--out", str(tmp_path / "page")],
                 ["history", str(other), "--out", str(tmp_path / "history")]):
        result = invoke(*args)
        assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert said in invoke("compare", str(a_run), str(other)).output
