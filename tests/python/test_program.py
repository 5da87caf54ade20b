"""Program.parse / print / text / to_json / load, check, and parse errors with line:col."""

import json
import pickle

import pytest
import steptp

from conftest import cli

BAD_SYNTAX = "input  A: f64[3]\noutput B: f64[3]\nL^{3}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{i}+;];\n"
OUT_OF_BOUNDS = "input  A: f64[3]\noutput B: f64[3]\nL^{4}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{i};];\n"


def test_parse_print_round_trip_matches_cli(matmul, matmul_path):
    assert matmul.name == "matmul"
    assert matmul.print() + "\n" == cli("print", matmul_path)
    assert matmul.print(pretty=True) == cli("print", matmul_path, "--pretty")
    again = steptp.Program.parse(matmul.text())
    assert again == matmul and again.hash == matmul.hash and again.name == "matmul"
    assert steptp.Program.from_json(matmul.to_json()) == matmul
    assert matmul.to_json() == json.loads(cli("print", matmul_path, "--json"))
    assert pickle.loads(pickle.dumps(matmul)) == matmul
    assert [d["name"] for d in matmul.signature] == ["A", "C", "D"]
    assert matmul.signature[2] == {"name": "D", "role": "output", "dtype": "f64", "shape": [8, 12], "alias": ""}


def test_parse_names_and_load(tmp_path, matmul):
    text = matmul.text().replace("name matmul\n", "")
    assert steptp.Program.parse(text).name == ""
    assert steptp.Program.parse(text, name="mm").name == "mm"
    f = tmp_path / "two.jsonl"
    f.write_text(json.dumps(matmul.to_json()) + "\n" + json.dumps(matmul.to_json()) + "\n")
    progs = steptp.Program.load(str(f))
    assert len(progs) == 2 and all(p == matmul for p in progs)


def test_parse_error_carries_line_and_col(tmp_path):
    f = tmp_path / "bad.leir"
    f.write_text(BAD_SYNTAX)
    expected = cli("check", f, check=False)  # the CLI reports FILE:LINE:COL on stderr
    with pytest.raises(steptp.ParseError) as e:
        steptp.Program.parse(BAD_SYNTAX, name="bad.leir")
    assert (e.value.line, e.value.col) == (3, 41)
    assert isinstance(e.value, ValueError) and isinstance(e.value, steptp.LeirError)
    assert "expected an operand" in e.value.message
    assert str(e.value).startswith("bad.leir:3:41: error:")
    with pytest.raises(steptp.ParseError) as e:
        steptp.Program.load(str(f))
    assert (e.value.file, e.value.line, e.value.col) == (str(f), 3, 41)
    assert expected == ""
    with pytest.raises(steptp.ParseError):
        steptp.Program.from_json({"name": "x", "known": []})
    with pytest.raises(steptp.ParseError) as e:
        steptp.Program.load(str(tmp_path / "missing.leir"))
    assert "cannot open" in e.value.message


def test_check_matches_cli(tmp_path, matmul, matmul_path):
    report = steptp.check(matmul)
    cli_report = json.loads(cli("check", matmul_path, "--json"))
    del cli_report["file"]
    assert report == cli_report
    assert report["valid"] and report["flops"] == 2 * 8 * 12 * 16

    f = tmp_path / "oob.leir"
    f.write_text(OUT_OF_BOUNDS)
    bad = steptp.check(steptp.Program.parse(OUT_OF_BOUNDS))
    assert not bad["valid"]
    assert [(e["line"], e["col"]) for e in bad["errors"]] == [(3, 13), (3, 27)]
    cli_bad = json.loads(cli("check", f, "--json", check=False))
    assert bad["errors"] == cli_bad["errors"]


def test_invalid_program_raises_with_position():
    p = steptp.Program.parse(OUT_OF_BOUNDS)
    for call in (lambda: steptp.run(p), lambda: steptp.lower(p), lambda: steptp.apply(p, "loop_parallelization")):
        with pytest.raises(steptp.InvalidProgramError) as e:
            call()
        assert (e.value.line, e.value.col) == (3, 13)
        assert "out of bounds" in e.value.message


def test_hostile_names_are_refused_and_aliases_kept(matmul):
    """Names reach generated source (issue #33): only the grammar's are accepted, in every entry."""
    with pytest.raises(steptp.ParseError) as e:
        steptp.Program.from_json(dict(matmul.to_json(), name="x\nint main(){}"))
    assert 'the program\'s "name" "x\\nint main(){}" is not valid' in e.value.message
    with pytest.raises(steptp.ParseError) as e:
        steptp.Program.parse(matmul.text().replace("name matmul", "name evil\\"), name="e.leir")
    assert (e.value.line, e.value.col) == (1, 6)
    p = steptp.Program.parse(matmul.text())
    with pytest.raises(steptp.ParseError):
        p.name = "a\nb"
    assert p.name == "matmul"
    p.name = "resnet-18.v2"
    assert p.name == "resnet-18.v2"
    aliased = matmul.to_json()
    aliased["known"][1]["alias"] = 'w "quoted" # \\'
    q = steptp.Program.from_json(aliased)
    assert steptp.Program.parse(q.text()).signature[1]["alias"] == 'w "quoted" # \\'
