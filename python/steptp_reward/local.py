"""The in-process scorer: the `steptp` Python package's score() (the reward module `steptp serve`
runs) behind the interface of StepTPClient, so the reward functions use either alike."""

from .client import as_context


def available():
    """Whether the steptp package (with its compiled core) is importable."""
    try:
        import steptp  # noqa: F401
    except ImportError:
        return False
    return True


class InProcessScorer:
    def score(self, answer, reward_context, measure=True):
        """The reply /v1/score would give (reward, parts per answer, funnel stages)."""
        import steptp

        return steptp.score(answer, as_context(reward_context), measure=measure)

    def score_batch(self, answers, contexts, measure=True):
        """One reply per (answer, context), in order, each with the "status" a batch item gets:
        200, or 400/422 with "error" for a malformed or invalid reward_context."""
        import steptp

        contexts = [as_context(c) for c in contexts]  # malformed: ValueError, as the HTTP client raises
        out = []
        for a, c in zip(answers, contexts):
            try:
                reply = self.score(a, c, measure)
            except steptp.Error as e:  # the status of its kind, as the service's
                item = {"status": steptp.errors.http_status(e), "error": str(e)}
                if isinstance(e, steptp.LeirError):
                    item.update(line=e.line, col=e.col)
                out.append(item)
                continue
            except ValueError as e:  # an argument Python itself refuses: a request error
                out.append({"status": 400, "error": str(e)})
                continue
            reply["status"] = 200
            out.append(reply)
        return out
