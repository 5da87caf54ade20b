"""HTTP client of `steptp serve` (docs/serve.md): scores assistant answers with /v1/score and
/v1/score/batch. Uses Debian's python3-requests (imported at the first request, so the in-process
scorer needs no requests); a 429 is retried after its Retry-After; a 503 (the service could
not judge: it is shutting down, or its worker died under the job) is "no score", a reply with
reward None. With an API key (the argument, else $STEPTP_API_KEY) every request carries
"Authorization: Bearer KEY"; a 401 raises PermissionError, a 413 (a program over one of the
service's limits) ValueError naming the limit."""

import json
import os
import time

DEFAULT_URL = "http://127.0.0.1:8080"


def service_url(url=None):
    """The service URL: the argument, else $STEPTP_SERVE_URL, else http://127.0.0.1:8080."""
    return (url or os.environ.get("STEPTP_SERVE_URL") or DEFAULT_URL).rstrip("/")


def as_context(value):
    """A reward_context given as a dict or as its JSON text (verl's ground_truth is often a string)."""
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict) or "root_program" not in value or "parent_program" not in value:
        raise ValueError("reward_context must hold root_program and parent_program (docs/dataset.md)")
    return value


class StepTPClient:
    def __init__(self, url=None, timeout=600.0, retries=20, session=None, api_key=None):
        self.url = service_url(url)
        key = api_key if api_key is not None else os.environ.get("STEPTP_API_KEY")
        self.headers = {"Authorization": "Bearer " + key} if key else {}
        self.timeout = timeout
        self.retries = retries
        self._session = session

    @property
    def session(self):
        if self._session is None:
            import requests

            self._session = requests.Session()
        return self._session

    def _post(self, path, body):
        for attempt in range(self.retries + 1):
            r = self.session.post(self.url + path, json=body, timeout=self.timeout, headers=self.headers)
            if r.status_code != 429 or attempt == self.retries:
                break
            time.sleep(float(r.headers.get("Retry-After", "1")))
        if r.status_code == 503:
            try:
                why = r.json().get("error", "service unavailable")
            except ValueError:
                why = "service unavailable"
            return {"reward": None, "infrastructure_failure": why, "status": 503}
        if r.status_code == 401:
            raise PermissionError("steptp serve at %s refused the request: missing or wrong API key "
                                  "(set $STEPTP_API_KEY or pass api_key)" % self.url)
        if r.status_code == 413:
            try:
                why = r.json().get("error", "over a limit of the service")
            except ValueError:
                why = "over a limit of the service"
            raise ValueError("steptp serve refused the request: " + why)
        r.raise_for_status()
        return r.json()

    def score(self, answer, reward_context, measure=True):
        """The full /v1/score reply (reward, parts per answer, funnel stages)."""
        return self._post("/v1/score", {"answer": answer, "reward_context": as_context(reward_context),
                                        "measure": measure})

    def score_batch(self, answers, contexts, measure=True, chunk=64):
        """One /v1/score reply per (answer, context), in order, in batches of `chunk`."""
        out = []
        items = [{"answer": a, "reward_context": as_context(c), "measure": measure} for a, c in zip(answers, contexts)]
        for i in range(0, len(items), chunk):
            reply = self._post("/v1/score/batch", {"items": items[i:i + chunk]})
            if reply.get("reward", 0) is None:  # the whole batch was not judged (503)
                out.extend(dict(reply) for _ in items[i:i + chunk])
            else:
                out.extend(reply["results"])
        return out
