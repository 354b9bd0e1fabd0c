"""The one line a caught exception is recorded as."""

from benchctl.errors import error_message


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def test_an_exception_is_its_first_line_and_where_it_came_from():
    said = error_message(raised(ValueError("expected [batch, dim]\nmore detail")))
    assert said.startswith("ValueError: expected [batch, dim] (test_errors.py:") and "more detail" not in said


def test_a_compile_error_says_the_compiler_s_first_error_not_only_its_heading():
    """torch's inductor raises a heading, the command line, and the compiler's output: the warnings first, then
    the error that says why."""
    text = ("CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/x/main.cpp -O3 -Werror=foo\n\nOutput:\n"
            "/tmp/torchinductor_root/be/cbe.main.cpp:221:34: warning: variable 'tmp103' set but not used\n"
            "/tmp/torchinductor_root/be/cbe.main.cpp:302:30: error: conflicting declaration 'auto acc0_vec'\n"
            "/tmp/torchinductor_root/be/cbe.main.cpp:400:1: error: a second error\n")
    said = error_message(raised(RuntimeError(text)))
    assert said.startswith("RuntimeError: CppCompileError: C++ compile error (test_errors.py:")
    assert said.endswith("): cbe.main.cpp:302:30: error: conflicting declaration 'auto acc0_vec'")
