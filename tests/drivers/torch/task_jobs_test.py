"""The task workload's job forms on orch-driver-torch against the llama.cpp
driver (docs/driver-protocol.md, "Chat messages" and "Context and
continuation"): the same rendered prompt and template hash from chat
messages, the same tokens and continuation positions for a context +
continuation, the same refusals, and both forms in a warm session."""

import atexit
import os
import shutil
import tempfile
import unittest

import harness

PLAIN = "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1"
CHAT = PLAIN + ",chat=chatml"
TORCH = {"engine": "torch@x", "quant": "f32", "kv": "f16", "attention": "off", "tp": "1",
         "hardware": "cpu", "threads": "1"}
RELEASES = ("b8390", "v0.4.0")
MESSAGES = [{"role": "system", "content": "You answer in JSON."},
            {"role": "user", "content": "Which port is\nthe database on?"},
            {"role": "assistant", "content": "{\"port\": 5432}"},
            {"role": "user", "content": "And the interface?"}]
CONTEXT = "Question: which interface carries VLAN 201?\nAnswer:"
CONTINUATION = " GigabitEthernet0/0/1.201"

_DIR = tempfile.mkdtemp(prefix="orch-torch-task-test-")
atexit.register(shutil.rmtree, _DIR, True)


def model(recipe):
    return harness.synth(recipe, os.path.join(_DIR, "chat.gguf" if "chat=" in recipe
                                              else "plain.gguf"))


def unknown_template_model():
    """The chat model with "<|im_start|>" turned into "<|xx_start|>" (same
    length): a template no llama.cpp family is detected in."""
    path = os.path.join(_DIR, "unknown-template.gguf")
    if not os.path.exists(path):
        with open(model(CHAT), "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data.replace(b"<|im_start|>", b"<|xx_start|>"))
    return path


def llama(release):
    return {"engine": "llama.cpp@" + release, "quant": "f32", "kv": "f16", "attention": "off",
            "tp": "1", "hardware": "cpu", "threads": "1"}


def job(path, coordinate, workload, capture=None):
    out = harness.teacher_forced(path, coordinate, capture=capture)
    out["workload"] = dict(workload)
    return out


def chat_workload(messages=None):
    return {"name": "tools", "kind": "generate", "messages": messages or MESSAGES,
            "max_tokens": 6, "task": {"workload": "tools", "case": "port-1"}}


def choice_workload(context=CONTEXT, continuation=CONTINUATION):
    return {"name": "quiz", "kind": "teacher_forced", "context": context,
            "continuation": continuation,
            "task": {"workload": "quiz", "case": "q1", "choice": 0}}


class TaskJobsTest(unittest.TestCase):
    def assertOk(self, out):
        self.assertEqual(out.status, 0, (out.error, out.log[-2000:]))
        self.assertIsNotNone(out.done)

    def assertError(self, out, code, *texts):
        self.assertEqual(out.status, 2, out.log[-2000:])
        self.assertEqual(out.error["code"], code)
        for text in texts:
            self.assertIn(text, out.error["message"])

    def test_messages_render_the_same_prompt_as_llama_cpp(self):
        ours = harness.run_in_process(job(model(CHAT), TORCH, chat_workload()))
        self.assertOk(ours)
        self.assertTrue(ours.done["rendered_prompt"].endswith("<|im_start|>assistant\n"))
        self.assertEqual(ours.done["chat_template"]["source"], "model")
        for release in RELEASES:
            theirs = harness.run(harness.llama_driver(release),
                                 job(model(CHAT), llama(release), chat_workload()))
            self.assertOk(theirs)
            self.assertEqual(ours.done["rendered_prompt"], theirs.done["rendered_prompt"])
            self.assertEqual(ours.done["chat_template"], theirs.done["chat_template"])
        # The rendered prompt is what the model was fed: the same job with it as
        # the prompt gives the same records.
        prompt = {"name": "tools", "kind": "generate", "max_tokens": 6,
                  "prompt": ours.done["rendered_prompt"]}
        plain = harness.run_in_process(job(model(CHAT), TORCH, prompt))
        self.assertOk(plain)
        self.assertEqual(plain.record_bytes, ours.record_bytes)
        self.assertNotIn("rendered_prompt", plain.done)

    def test_continuation_tokens_and_positions_equal_llama_cpps(self):
        ours = harness.run_in_process(job(model(PLAIN), TORCH, choice_workload()))
        self.assertOk(ours)
        first = ours.done["continuation"]["first_position"]
        count = ours.done["continuation"]["tokens"]
        self.assertEqual(len(ours.records), first + 1 + count)
        targets = [f["target_id"] for f, _, _ in ours.records]
        self.assertEqual(targets[first:first + count], ours.inputs[first + 1:])
        for release in RELEASES:
            theirs = harness.run(harness.llama_driver(release),
                                 job(model(PLAIN), llama(release), choice_workload()))
            self.assertOk(theirs)
            self.assertEqual(ours.inputs, theirs.inputs)
            self.assertEqual(ours.done["continuation"], theirs.done["continuation"])
            self.assertEqual(ours.done["positions"], theirs.done["positions"])

    def test_the_row_budget_is_judged_on_the_tokenized_run_as_llama_cpp_does(self):
        budget = {"top_logits": 20, "full_every": 0, "full_windows": [],
                  "full_row_budget_bytes": 1 << 20}
        ours = harness.run_in_process(job(model(PLAIN), TORCH, choice_workload(), budget))
        theirs = harness.run(harness.llama_driver("b8390"),
                             job(model(PLAIN), llama("b8390"), choice_workload(), budget))
        self.assertOk(ours)
        self.assertOk(theirs)
        self.assertTrue(all(ours.full_rows))
        self.assertEqual([bool(r) for r in ours.full_rows],
                         [bool(r) for r in theirs.full_rows])

    def test_continuation_positions_must_be_all_or_left_out(self):
        ours = harness.run_in_process(job(model(PLAIN), TORCH, choice_workload()))
        self.assertOk(ours)
        total = len(ours.records)
        given = harness.run_in_process(
            job(model(PLAIN), TORCH, dict(choice_workload(), positions=total)))
        self.assertOk(given)
        self.assertEqual(given.record_bytes, ours.record_bytes)
        cut = harness.run_in_process(
            job(model(PLAIN), TORCH, dict(choice_workload(), positions=total - 1)))
        self.assertError(cut, "invalid_job", "evaluates all its %d tokens" % total)

    def test_a_model_without_a_template_is_an_invalid_combination_naming_it(self):
        path = model(PLAIN)
        ours = harness.run_in_process(job(path, TORCH, chat_workload()))
        self.assertError(ours, "invalid_combination", path, "tokenizer.chat_template")
        self.assertEqual(ours.records, [])

    def test_a_template_that_is_not_chatml_is_refused_by_both_drivers(self):
        path = unknown_template_model()
        ours = harness.run_in_process(job(path, TORCH, chat_workload()))
        self.assertError(ours, "invalid_combination", path, "<|xx_start|>", "ChatML")
        theirs = harness.run(harness.llama_driver("b8390"),
                             job(path, llama("b8390"), chat_workload()))
        self.assertError(theirs, "invalid_combination", path, "<|xx_start|>")

    def test_malformed_messages_are_invalid_jobs(self):
        bad = harness.run_in_process(
            job(model(CHAT), TORCH, chat_workload([{"role": "user", "content": 7}])))
        self.assertError(bad, "invalid_job", "messages[0].content: expected a string, got 7")

    def test_a_warm_session_runs_both_forms_as_cold_runs_do(self):
        jobs = [job(model(CHAT), TORCH, chat_workload()),
                job(model(CHAT), TORCH, choice_workload()),
                job(model(CHAT), TORCH, chat_workload())]
        session = harness.run_session(harness.torch_driver(), jobs)
        self.assertEqual(session.status, 0, session.log[-2000:])
        self.assertEqual(len(session.jobs), 3)
        for i, one in enumerate(jobs):
            warm = session.jobs[i]
            cold = harness.run_in_process(one)
            self.assertOk(cold)
            self.assertEqual(warm.hello["session"]["warm"], i > 0)
            self.assertEqual(warm.record_bytes, cold.record_bytes)
            for key in ("rendered_prompt", "chat_template", "continuation", "generated_ids"):
                self.assertEqual(warm.done.get(key), cold.done.get(key), (i, key))


if __name__ == "__main__":
    unittest.main()
