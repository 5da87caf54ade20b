"""The Python reward functions (python/steptp_reward) called as verl and TRL call them, with plain
Python objects, against a real `steptp serve` on loopback (127.0.0.1, a free port, always stopped).
Run by ctest: STEPTP_EXE names the binary, STEPTP_SHARED_DIR the shared data."""

import json
import os
import signal
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import steptp_reward  # noqa: E402
from steptp_reward import rewards  # noqa: E402


def start_server(*args):
    """`steptp serve` on a free loopback port with `args`: (process, url)."""
    server = subprocess.Popen([os.environ["STEPTP_EXE"], "serve", "--host", "127.0.0.1", "--port", "0", *args],
                              stdout=subprocess.PIPE, text=True)
    return server, server.stdout.readline().strip().rsplit(" ", 1)[-1]


def stop_server(server):
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)
    server.stdout.close()


class Clients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        exe = os.environ["STEPTP_EXE"]
        cls.server = subprocess.Popen(
            [exe, "serve", "--host", "127.0.0.1", "--port", "0", "--workers", "2", "--measure-min-time", "0.002",
             "--peaks", os.path.join(os.environ.get("STEPTP_BINARY_DIR", "/tmp"), "serve_test_peaks.json")],
            stdout=subprocess.PIPE, text=True)
        try:
            line = cls.server.stdout.readline()
            url = line.strip().rsplit(" ", 1)[-1]
            if not url.startswith("http://127.0.0.1:"):
                raise RuntimeError("steptp serve did not start: %r" % line)
            os.environ["STEPTP_SERVE_URL"] = url
            rewards._clients.clear()
            with open(os.path.join(os.environ["STEPTP_SHARED_DIR"], "examples", "matmul.json")) as f:
                prog = json.load(f)
            client = steptp_reward.StepTPClient()
            cls.matmul = client._post("/v1/check", {"program": prog})["canonical"]
        except Exception:
            cls.tearDownClass()
            raise
        cls.context = {"root_program": cls.matmul, "parent_program": cls.matmul}
        cls.parallel = ('<think>a is independent</think><answer>{"strategy": "loop_parallelization", "site": 0}'
                        '</answer>')
        cls.wrong = "<answer>%s</answer>" % json.dumps({"transformed_IR": cls.matmul.replace("+A", "-A")})

    @classmethod
    def tearDownClass(cls):
        cls.server.send_signal(signal.SIGTERM)
        try:
            cls.server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            cls.server.kill()
            cls.server.wait()
        cls.server.stdout.close()

    # ---- verl: compute_score(data_source, solution_str, ground_truth, extra_info) ----
    def test_verl_positional_call_with_dict_and_json_ground_truth(self):
        self.assertEqual(steptp_reward.compute_score("steptp", "no answer", self.context, {}), -1.0)
        self.assertEqual(steptp_reward.compute_score("steptp", self.wrong, json.dumps(self.context), None), -0.5)
        r = steptp_reward.compute_score("steptp", self.parallel, self.context, {"index": 3})
        self.assertIsInstance(r, float)
        # Equivalent and compiled (0.2) plus 0.8*clamp(log2 speedup, -1, 1).
        self.assertGreaterEqual(r, 0.2 - 0.8)
        self.assertLessEqual(r, 1.0)

    def test_verl_context_in_extra_info(self):
        r = steptp_reward.compute_score(data_source="steptp", solution_str=self.parallel, ground_truth=None,
                                        extra_info={"reward_context": self.context, "steptp_measure": False})
        self.assertEqual(r, 0.1)  # verified equivalent, not timed

    def test_verl_bad_context_raises(self):
        with self.assertRaises(ValueError):
            steptp_reward.compute_score("steptp", self.parallel, {"root_program": self.matmul}, None)

    # ---- TRL: reward_func(prompts=..., completions=..., <dataset columns>=...) ----
    def test_trl_string_and_conversational_completions(self):
        completions = [self.parallel, "garbage", self.wrong,
                       [{"role": "assistant", "content": self.parallel}]]
        out = steptp_reward.steptp_reward(prompts=["p"] * 4, completions=completions,
                                          reward_context=[self.context] * 4, completion_ids=[[1]] * 4,
                                          steptp_measure=False)
        self.assertEqual(out, [0.1, -1.0, -0.5, 0.1])

    # ---- no score: a job out of time while verifying is not a wrong answer ----
    def test_no_score_is_none(self):
        server, url = start_server("--workers", "1", "--job-timeout", "1", "--peaks", "none")
        try:
            # A dead nest the interpreter needs far longer than the job's second to run.
            at = self.matmul.index("B^{8}")
            slow = self.matmul[:at] + "L^{200000000}_{r=0}[T^{f64,g}_{0}=A^{f64,g}_{0,0};];" + self.matmul[at:]
            answer = "<answer>%s</answer>" % json.dumps({"transformed_IR": slow})
            self.assertIsNone(steptp_reward.compute_score("steptp", answer, self.context, {}, url=url))
            out = steptp_reward.steptp_reward(completions=[answer, "garbage"], reward_context=[self.context] * 2,
                                              url=url)
            self.assertEqual(out, [None, -1.0])
        finally:
            stop_server(server)

    def test_trl_batches_larger_than_one_request(self):
        n = 70  # two /v1/score/batch requests (64 + 6)
        out = steptp_reward.steptp_reward(completions=["x"] * (n - 1) + [self.parallel],
                                          reward_context=[json.dumps(self.context)] * n, steptp_measure=False)
        self.assertEqual(out, [-1.0] * (n - 1) + [0.1])


class ApiKey(unittest.TestCase):
    """A service started with --api-key: the client sends $STEPTP_API_KEY (or api_key) as a bearer
    token, and without it gets a clear PermissionError."""

    def test_bearer_token_from_argument_and_environment(self):
        server, url = start_server("--workers", "1", "--api-key", "k3y", "--peaks", "none")
        try:
            with open(os.path.join(os.environ["STEPTP_SHARED_DIR"], "examples", "matmul.json")) as f:
                prog = json.load(f)
            self.assertTrue(steptp_reward.StepTPClient(url, api_key="k3y")._post("/v1/check", {"program": prog})["valid"])
            os.environ["STEPTP_API_KEY"] = "k3y"
            try:
                self.assertTrue(steptp_reward.StepTPClient(url)._post("/v1/check", {"program": prog})["valid"])
            finally:
                del os.environ["STEPTP_API_KEY"]
            with self.assertRaises(PermissionError):
                steptp_reward.StepTPClient(url)._post("/v1/check", {"program": prog})
            with self.assertRaises(PermissionError):
                steptp_reward.StepTPClient(url, api_key="wrong")._post("/v1/check", {"program": prog})
        finally:
            stop_server(server)


if __name__ == "__main__":
    unittest.main()
