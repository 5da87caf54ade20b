"""verify, strategies, apply, lower, bench, tune, tokens: against the CLI and independent checks;
the GIL is released during long calls."""

import json
import threading
import time

import numpy as np
import pytest
import steptp

from conftest import SHARED, cli

REJECTED_BY_CUDA = "input  A: f64[4]\noutput B: f64[4]\nB^{4}_{q=0}[B^{f64,g}_{q}=A^{f64,g}_{q};];\n"


def test_verify_matches_cli(tmp_path, matmul, wrong_matmul, matmul_path):
    same = steptp.verify(matmul, matmul, trials=3, seed=11)
    assert same["equivalent"] and same["class"] == "exact"
    wrong = steptp.verify(matmul, wrong_matmul, trials=3, seed=11)
    assert not wrong["equivalent"] and wrong["class"] == "failed" and wrong["worst"]["tensor"] == "D"
    f = tmp_path / "wrong.leir"
    f.write_text(wrong_matmul.text())
    assert wrong == json.loads(cli("verify", matmul_path, f, "--trials", 3, "--seed", 11, "--json", check=False))


def test_strategies_are_the_43_of_the_cli():
    names = steptp.strategies()
    assert len(names) == 43 and len(set(names)) == 43
    listed = [json.loads(l) for l in cli("strategies", "--json").splitlines()]
    assert names == [s["name"] for s in listed]
    info = steptp.strategy_info(names[5])
    assert info == {k: listed[5][k] for k in ("name", "index", "class", "description")}
    with open(f"{SHARED}/STRATEGIES.md") as f:
        spec = f.read()
    assert all(n in spec for n in names)


def test_apply_matches_cli_and_verifies(matmul, matmul_path):
    results = steptp.apply(matmul, "loop_parallelization", all=True, seed=2)
    ref = [json.loads(l) for l in cli("apply", matmul_path, "--strategy", "loop_parallelization", "--all",
                                      "--seed", 2).splitlines()]
    assert len(results) == len(ref) > 0
    for r, c in zip(results, ref):
        assert isinstance(r["program"], steptp.Program)
        assert r["program"].to_json() == c["program"]
        assert {k: r[k] for k in ("strategy", "site", "params", "class", "verdict")} == \
               {k: c[k] for k in ("strategy", "site", "params", "class", "verdict")}
        assert r["program"] != matmul and steptp.verify(matmul, r["program"])["equivalent"]
    # The action form with explicit parameters, as the reward applies it.
    first = results[0]
    again = steptp.apply(matmul, first["strategy"], site=first["site"], params=first["params"])
    assert [a["program"] for a in again] == [first["program"]]
    unchecked = steptp.apply(matmul, "loop_parallelization", site=0, verify=False)
    assert unchecked and "verdict" not in unchecked[0]
    with pytest.raises(ValueError, match="unknown strategy 'no_such'"):
        steptp.apply(matmul, "no_such")
    # A site or parameters the program lacks: a request error (base::ErrorKind::BadRequest), ValueError.
    with pytest.raises(ValueError, match="are not among the"):
        steptp.apply(matmul, "loop_split", site=0, params={"factor": 999})
    with pytest.raises(ValueError, match="site 999 does not exist"):
        steptp.apply(matmul, "loop_split", site=999, params={})


def test_lower_matches_cli(tmp_path, matmul, matmul_path):
    for target in ("cpu", "cuda", "tir"):
        assert steptp.lower(matmul, target) == cli("lower", matmul_path, "--target", target)
    assert steptp.lower(matmul, "tir", tir_dialect="block") == cli("lower", matmul_path, "--target", "tir",
                                                                   "--tir-dialect", "block")
    rejected = steptp.Program.parse(REJECTED_BY_CUDA, name="r.leir")
    with pytest.raises(steptp.LowerError) as e:
        steptp.lower(rejected, "cuda")
    assert (e.value.line, e.value.col) == (3, 1) and "names no GPU axis" in e.value.message
    with pytest.raises(ValueError):
        steptp.lower(matmul, "fpga")


def test_bench_times_and_compares(matmul, wrong_matmul):
    s = steptp.bench(matmul, threads=1, min_time=0.01)
    assert set(s) == {"median_ms", "min_ms", "max_ms", "cv", "repeats"}
    assert 0 < s["min_ms"] <= s["median_ms"] <= s["max_ms"] and s["repeats"] >= 5
    c = steptp.bench(matmul, against=wrong_matmul, threads=1, min_time=0.01)
    assert c["speedup"] > 0 and c["baseline"]["median_ms"] > 0
    other = steptp.Program.parse("input A: f64[4]\noutput B: f64[4]\nL^{4}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{i};];")
    with pytest.raises(ValueError, match="signatures differ"):
        steptp.bench(matmul, against=other)


def test_tune_finds_a_verified_program(tmp_path, matmul):
    store = tmp_path / "m.sqlite"
    r = steptp.tune(matmul, trials=4, threads=1, seed=1, store=store)
    assert isinstance(r["best"], steptp.Program) and store.exists()
    assert steptp.verify(matmul, r["best"])["equivalent"]
    assert r["trials_measured"] >= 1 and r["speedup"] > 0 and isinstance(r["trajectory"], list)
    rng = np.random.default_rng(4)
    a, c = rng.standard_normal((8, 16)), rng.standard_normal((16, 12))
    np.testing.assert_allclose(steptp.run(r["best"], {"A": a, "C": c})["D"], a @ c, rtol=1e-9)


def test_tokens_match_cli(tmp_path, matmul):
    text = matmul.text() + " héllo 世界\n"
    f = tmp_path / "t.txt"
    f.write_text(text)
    n = json.loads(cli("tokens", f, "--json"))["files"][0]["tokens"]
    assert steptp.tokens(text) == n > 0
    assert steptp.tokens([text, ""]) == [n, 0]
    with pytest.raises(Exception, match="cannot open"):
        steptp.tokens("x", tokenizer=str(tmp_path / "none.json"))


def test_long_calls_release_the_gil(matmul):
    big = steptp.Program.parse(matmul.text().replace("[8,", "[128,").replace("{8}", "{128}"))
    span = {}

    def work():
        span["start"] = time.perf_counter()
        steptp.verify(big, big, trials=200)
        span["end"] = time.perf_counter()

    t = threading.Thread(target=work)
    last, longest = time.perf_counter(), 0.0
    t.start()
    while t.is_alive():  # this thread keeps running Python only if the call released the GIL
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    t.join()
    duration = span["end"] - span["start"]
    assert duration > 0.1
    assert longest < duration / 2
