"""In-process answer scoring (steptp.score, parse_answer) and the verl/TRL reward functions of
python/steptp_reward using it when steptp is importable."""

import json

import pytest
import steptp
import steptp_reward
from steptp_reward import local, rewards


@pytest.fixture(scope="module")
def context(matmul):
    return {"root_program": matmul.text(), "parent_program": matmul.text()}


PARALLEL = '<think>rows are independent</think><answer>{"strategy": "loop_parallelization", "site": 0}</answer>'


def wrong_answer(matmul):
    return "<answer>%s</answer>" % json.dumps({"transformed_IR": matmul.text().replace("+A", "-A")})


def test_parse_answer():
    a = steptp.parse_answer(PARALLEL)
    assert a["ok"] and not a["list"]
    assert a["steps"] == [{"form": "action", "strategy": "loop_parallelization", "site": 0}]
    bad = steptp.parse_answer("no tags")
    assert not bad["ok"] and bad["reason"] == "no <answer> tag" and bad["steps"] == []


def test_score_funnel_without_measuring(context, matmul):
    ok = steptp.score(PARALLEL, context, measure=False, verify_seed=1, input_seed=2)
    assert ok["reward"] == pytest.approx(0.1) and ok["parsed"]
    outcome = ok["answers"][0]
    assert outcome["parts"]["equivalence"] == pytest.approx(0.1) and outcome["parts"]["compiles"] == 0
    assert (ok["verify_seed"], ok["input_seed"]) == (1, 2)
    assert steptp.score("no answer", context, measure=False)["reward"] == -1.0
    assert steptp.score(wrong_answer(matmul), json.dumps(context), measure=False)["answers"][0]["failed_stage"] \
        == "equivalent"
    unchanged = "<answer>%s</answer>" % json.dumps({"transformed_IR": matmul.text()})
    assert steptp.score(unchanged, context, measure=False)["reward"] == 0


def test_score_measured(tmp_path, context):
    r = steptp.score(PARALLEL, context, measure_min_time=0.002, peaks=str(tmp_path / "peaks.json"))
    outcome = r["answers"][0]
    assert outcome["parts"]["compiles"] == pytest.approx(0.1)
    assert -1.0 <= r["reward"] <= 1.0 and outcome["speedup_vs_parent"] > 0
    assert (tmp_path / "peaks.json").exists()  # the implausibility check measured the machine once


def test_score_bad_context_raises(context, matmul):
    with pytest.raises(ValueError, match="parent_program"):
        steptp.score(PARALLEL, {"root_program": matmul.text()}, measure=False)
    broken = dict(context, parent_program="input A: f64[2]\noutput B: f64[2]\nL^{2}_{i=0}[B^{f64,g}_{i}=;];")
    with pytest.raises(steptp.LeirError) as e:
        steptp.score(PARALLEL, broken, measure=False)
    assert e.value.file == "reward_context.parent_program" and (e.value.line, e.value.col) == (3, 27)  # the ";" where an operand belongs


def test_reward_functions_use_the_in_process_scorer(monkeypatch, context, matmul):
    monkeypatch.delenv("STEPTP_SERVE_URL", raising=False)
    monkeypatch.delenv("STEPTP_REWARD_BACKEND", raising=False)
    monkeypatch.setattr(rewards, "_clients", {})
    assert local.available() and isinstance(rewards._client(), local.InProcessScorer)
    # verl
    assert steptp_reward.compute_score("steptp", "no answer", context, {}) == -1.0
    assert steptp_reward.compute_score("steptp", wrong_answer(matmul), json.dumps(context), None) == -0.5
    assert steptp_reward.compute_score(data_source="steptp", solution_str=PARALLEL, ground_truth=None,
                                       extra_info={"reward_context": context, "steptp_measure": False}) == 0.1
    with pytest.raises(ValueError):
        steptp_reward.compute_score("steptp", PARALLEL, {"root_program": matmul.text()}, None)
    # TRL
    completions = [PARALLEL, "garbage", wrong_answer(matmul), [{"role": "assistant", "content": PARALLEL}]]
    out = steptp_reward.steptp_reward(prompts=["p"] * 4, completions=completions, reward_context=[context] * 4,
                                      steptp_measure=False)
    assert out == [0.1, -1.0, -0.5, 0.1]
    broken = dict(context, root_program="input A: f64[2]\n")
    with pytest.raises(RuntimeError, match="refused an item"):
        steptp_reward.steptp_reward(completions=[PARALLEL], reward_context=[broken], steptp_measure=False)


def test_backend_choice(monkeypatch):
    monkeypatch.setattr(rewards, "_clients", {})
    monkeypatch.setenv("STEPTP_SERVE_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("STEPTP_REWARD_BACKEND", raising=False)
    assert isinstance(rewards._client(), steptp_reward.StepTPClient)  # a configured service is used
    monkeypatch.setenv("STEPTP_REWARD_BACKEND", "inprocess")
    assert isinstance(rewards._client(), local.InProcessScorer)
    monkeypatch.setenv("STEPTP_REWARD_BACKEND", "carrier-pigeon")
    with pytest.raises(ValueError):
        rewards._client()
