"""The server engine drivers (drivers/server): requests and answers of each
family's adapter against documents written from the servers' API references
(documents/README.md), malformed answers, and the driver processes against a
real HTTP server in the test process serving those documents."""

import json
import math
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import unittest

import fake_server
import harness
from fake_server import document
from orch_driver.errors import EngineError, InvalidCombination
from orch_server import common, llama_server, load as load_mod, ollama, sglang, vllm

URL = "http://127.0.0.1:1/x"
TOKENS = [11, 22, 33, 44]
# The rows every teacher-forced document of the prompt [11, 22, 33, 44] gives
# at top_k 3: (ids, logprobs, target, target logprob, input token).
EXPECTED = [([22, 5, 6], [-0.75, -1.5, -2.25], 22, -0.75, 11),
            ([8, 9, 10], [-0.25, -2.5, -3.0], 33, -4.0, 22),
            ([1, 44, 2], [-0.125, -0.5, -2.0], 44, -0.5, 33),
            ([55, 12, 9], [-0.5, -1.25, -2.0], -1, math.nan, 44)]


def load(name):
    return json.loads(document(name))


def plain(rows):
    return [(r.ids, r.logprobs, r.target_id, r.target_logprob, r.input_token) for r in rows]


class RowsMixin:
    def assertRows(self, rows, expected):
        self.assertEqual([r.position for r in rows], list(range(len(expected))))
        for got, want in zip(plain(rows), expected):
            self.assertEqual(got[:3] + got[4:], want[:3] + want[4:])
            if math.isnan(want[3]):
                self.assertTrue(math.isnan(got[3]))
            else:
                self.assertEqual(got[3], want[3])


class RequestTest(unittest.TestCase):
    def test_vllm_teacher_forcing_sends_ids_and_asks_prompt_logprobs(self):
        body = vllm.request_for("m", TOKENS, 20, common.Sampling({}))
        self.assertEqual(body["prompt"], TOKENS)
        self.assertEqual((body["max_tokens"], body["prompt_logprobs"], body["logprobs"]), (1, 20, 20))
        self.assertIs(body["return_tokens_as_token_ids"], True)
        for field in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "seed",
                      "presence_penalty", "frequency_penalty"):
            self.assertIn(field, body)
        self.assertEqual((body["temperature"], body["top_p"], body["top_k"]), (0.0, 1.0, -1))

    def test_vllm_generation_asks_no_prompt_logprobs_and_sets_the_job_sampler(self):
        body = vllm.request_for("m", TOKENS, 5, common.Sampling(
            {"sampler.temperature": 0.7, "sampler.top_k": 40, "sampler.seed": 9}), 16, False)
        self.assertNotIn("prompt_logprobs", body)
        self.assertEqual((body["temperature"], body["top_k"], body["seed"], body["max_tokens"]),
                         (0.7, 40, 9, 16))

    def test_sglang_teacher_forcing_starts_logprobs_at_the_first_input_token(self):
        body = sglang.request_for(TOKENS, 7, common.Sampling({}))
        self.assertEqual(body["input_ids"], TOKENS)
        self.assertNotIn("text", body)
        self.assertEqual((body["logprob_start_len"], body["top_logprobs_num"]), (0, 7))
        self.assertIs(body["return_logprob"], True)
        params = body["sampling_params"]
        self.assertEqual((params["max_new_tokens"], params["temperature"], params["top_p"],
                          params["top_k"], params["min_p"]), (1, 0.0, 1.0, -1, 0.0))
        self.assertIn("sampling_seed", params)

    def test_llama_server_sets_every_sampler_field_against_its_defaults(self):
        body = llama_server.request_for(TOKENS[:2], 20, common.Sampling({}))
        self.assertEqual(body["prompt"], [11, 22])
        self.assertEqual((body["n_predict"], body["n_probs"], body["cache_prompt"]), (1, 20, True))
        # llama-server's own defaults are temperature 0.8, top_k 40, top_p 0.95, min_p 0.05.
        self.assertEqual((body["temperature"], body["top_k"], body["top_p"], body["min_p"]),
                         (0.0, 0, 1.0, 0.0))
        self.assertIs(body["post_sampling_probs"], False)
        for field in ("typical_p", "repeat_penalty", "repeat_last_n", "presence_penalty",
                      "frequency_penalty", "dry_multiplier", "xtc_probability", "mirostat",
                      "seed", "samplers"):
            self.assertIn(field, body)

    def test_ollama_sends_a_raw_prompt_with_every_option(self):
        body = ollama.request_for("kjv-tiny", "In the", 5, common.Sampling({}), 8, 512)
        self.assertEqual((body["raw"], body["stream"], body["logprobs"], body["top_logprobs"]),
                         (True, False, True, 5))
        options = body["options"]
        self.assertEqual((options["temperature"], options["top_k"], options["top_p"],
                          options["min_p"], options["num_predict"], options["num_ctx"]),
                         (0.0, 0, 1.0, 0.0, 8, 512))
        self.assertIn("seed", options)


class ParseTest(unittest.TestCase, RowsMixin):
    def test_vllm_prompt_logprobs_give_one_row_per_token(self):
        rows = vllm.parse_response(load("vllm-completions-teacher-forced.json"), TOKENS, 3, URL)
        self.assertRows(rows, EXPECTED)

    def test_sglang_input_logprobs_give_the_same_rows(self):
        rows, ids = sglang.parse_response(load("sglang-generate-teacher-forced.json"), 3, URL)
        self.assertEqual(ids, TOKENS)
        self.assertRows(rows, EXPECTED)

    def test_sglang_cut_to_positions_takes_the_last_row_from_the_prompt(self):
        rows, ids = sglang.parse_response(load("sglang-generate-teacher-forced.json"), 3, URL, 3)
        self.assertEqual(ids, TOKENS[:3])
        self.assertRows(rows, EXPECTED[:3])

    def test_llama_server_one_row_per_request_with_the_target_when_returned(self):
        doc = load("llama-server-completion.json")
        (row,) = llama_server.parse_response(doc, 3, URL, 2, 33, 44)
        self.assertEqual((row.position, row.ids, row.logprobs, row.target_id, row.target_logprob,
                          row.input_token), (2, [55, 44, 9], [-0.5, -1.25, -2.0], 44, -1.25, 33))
        (outside,) = llama_server.parse_response(doc, 3, URL, 2, 33, 7)
        self.assertEqual(outside.target_id, 7)
        self.assertTrue(math.isnan(outside.target_logprob))

    def test_vllm_generation_rows(self):
        rows, text, finish = vllm.parse_generation(load("vllm-completions-generate.json"), 22, 3,
                                                   URL)
        self.assertEqual([(r.input_token, r.output_token, r.ids) for r in rows],
                         [(22, 55, [55, 12, 9]), (55, 56, [56, 3, 4])])
        self.assertEqual((text, finish), (" the Lord", "length"))

    def test_sglang_generation_rows_are_marked_processed_when_sampled(self):
        rows, text, _ = sglang.parse_generation(load("sglang-generate.json"), -1, 3, URL, True)
        self.assertEqual([(r.output_token, r.ids, r.processed) for r in rows],
                         [(55, [55, 12, 9], True), (56, [56, 3, 4], True)])
        self.assertEqual(text, " the Lord")

    def test_ollama_bytes_become_ids_through_the_model_vocabulary(self):
        rows, text, finish = ollama.parse_response(load("ollama-generate.json"), vocabulary(), 3,
                                                   URL)
        self.assertEqual([(r.input_token, r.output_token, r.ids, r.logprobs) for r in rows],
                         [(-1, 55, [55, 44, 9], [-0.5, -1.25, -2.0]),
                          (55, 56, [56, 3, 4], [-0.25, -1.75, -3.5])])
        self.assertEqual((text, finish), (" the Lord", "length"))


def vocabulary(extra=()):
    tokens = ["t%d" % i for i in range(60)]
    for token, text in ((55, "\u0120the"), (44, "\u0120and"), (9, ","), (56, "\u0120Lord"),
                        (3, "\u0120God"), (4, ".")) + tuple(extra):
        tokens[token] = text
    return ollama.Vocabulary({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": tokens})


class MalformedTest(unittest.TestCase):
    def assertEngineError(self, call, *parts):
        with self.assertRaises(EngineError) as caught:
            call()
        for part in parts:
            self.assertIn(part, caught.exception.message)

    def test_fewer_logprobs_than_asked_are_an_engine_error(self):
        self.assertEngineError(lambda: vllm.parse_response(
            load("vllm-completions-teacher-forced.json"), TOKENS, 4, URL), URL, "top 4", "has 3")
        self.assertEngineError(lambda: sglang.parse_response(
            load("sglang-generate-teacher-forced.json"), 5, URL), URL, "top 5")
        self.assertEngineError(lambda: llama_server.parse_response(
            load("llama-server-completion.json"), 20, URL, 0, 11, 22), URL, "top 20", "has 3")
        self.assertEngineError(lambda: ollama.parse_response(
            load("ollama-generate.json"), vocabulary(), 4, URL), URL, "top 4")

    def test_a_prompt_logprobs_entry_without_the_prompt_token(self):
        doc = load("vllm-completions-teacher-forced.json")
        del doc["choices"][0]["prompt_logprobs"][2]["33"]
        self.assertEngineError(lambda: vllm.parse_response(doc, TOKENS, 3, URL), URL,
                               "prompt_logprobs[2]", "no entry for the prompt token 33")

    def test_missing_and_mistyped_fields_name_the_field(self):
        doc = load("vllm-completions-teacher-forced.json")
        doc["choices"][0]["prompt_logprobs"] = doc["choices"][0]["prompt_logprobs"][:2]
        self.assertEngineError(lambda: vllm.parse_response(doc, TOKENS, 3, URL), URL,
                               "prompt_logprobs has 2 entries for a prompt of 4 tokens")
        doc = load("sglang-generate-teacher-forced.json")
        doc["meta_info"]["input_top_logprobs"][1][0] = ["x", 22, None]
        self.assertEngineError(lambda: sglang.parse_response(doc, 3, URL), URL,
                               "input_top_logprobs[1][0][0]", "expected a number")
        self.assertEngineError(lambda: llama_server.parse_response({"content": ""}, 3, URL, 0,
                                                                   11, 22),
                               URL, "completion_probabilities")
        self.assertEngineError(lambda: sglang.parse_response([], 3, URL), URL, "meta_info")

    def test_bytes_no_token_spells_are_an_engine_error(self):
        doc = load("ollama-generate.json")
        doc["logprobs"][0]["top_logprobs"][2]["bytes"] = [0xff, 0xfe]
        self.assertEngineError(lambda: ollama.parse_response(doc, vocabulary(), 3, URL), URL,
                               "logprobs[0].top_logprobs[2]", "no token")

    def test_bytes_two_tokens_spell_are_an_engine_error(self):
        doc = load("ollama-generate.json")
        self.assertEngineError(lambda: ollama.parse_response(
            doc, vocabulary(extra=((7, "\u0120the"),)), 3, URL), "tokens [7, 55]")

    def test_vllm_max_logprobs_refusal_is_invalid_combination(self):
        from orch_server.http import HttpError
        error = HttpError("x", URL, 400, document("vllm-error-max-logprobs.json"))
        refused = vllm.refused_top_k(error, 50, URL)
        self.assertIsInstance(refused, InvalidCombination)
        self.assertIn("capture.top_logits = 50", refused.message)
        self.assertIn("at most 20", refused.message)


def routes(family, overrides=None):
    ok = lambda name: (200, document(name), "whole")  # noqa: E731
    table = {
        "vllm": {("GET", "/version"): ok("vllm-version.json"),
                 ("GET", "/v1/models"): ok("vllm-models.json"),
                 ("POST", "/v1/completions"): ok("vllm-completions-teacher-forced.json")},
        "sglang": {("GET", "/get_server_info"): ok("sglang-get-server-info.json"),
                   ("GET", "/get_model_info"): ok("sglang-get-model-info.json"),
                   ("POST", "/generate"): ok("sglang-generate-teacher-forced.json")},
        "llama-server": {("GET", "/props"): ok("llama-server-props.json"),
                         ("GET", "/slots"): ok("llama-server-slots.json"),
                         ("POST", "/completion"): ok("llama-server-completion.json")},
        "ollama": {("GET", "/api/version"): ok("ollama-version.json"),
                   ("POST", "/api/show"): ok("ollama-show.json"),
                   ("POST", "/api/generate"): ok("ollama-generate.json")},
    }[family]
    table.update(overrides or {})
    return table


LABELS = {"vllm": "vllm@0.11.0", "sglang": "sglang@0.5.4", "llama-server": "llama-server@b8390",
          "ollama": "ollama@0.13.0"}


class ProcessBase(unittest.TestCase):
    def run_against(self, family, overrides=None, label=None, **job_args):
        with fake_server.FakeServer(routes(family, overrides)) as server:
            out = harness.run(family, harness.job(label or LABELS[family], server.url,
                                                  **job_args))
            self.url = server.url
            self.server = server
        self.assertNotIn("Traceback", out.log)
        self.assertEqual(out.trailing, 0)
        return out

    def assertError(self, out, code, *parts):
        self.assertEqual(out.error["code"], code, out.error)
        self.assertEqual(out.status, 2 if code != "engine_error" else 3)
        self.assertEqual(out.frames[0], 1)
        for part in parts:
            self.assertIn(part, out.error["message"])


class ProcessTest(ProcessBase):
    def test_a_label_of_another_version_is_invalid_combination_naming_both(self):
        out = self.run_against("vllm", label="vllm@0.10.1")
        self.assertError(out, "invalid_combination", "0.10.1", '"0.11.0"', self.url)
        self.assertEqual(out.hello["version"], "0.11.0")  # the hello reports the server

    def test_llama_server_slots_that_contradict_total_slots(self):
        out = self.run_against("llama-server", coordinate={"slots": "4"})
        self.assertError(out, "invalid_combination", 'slots = "4"', "reports 1",
                         "total_slots")

    def test_llama_server_release_is_read_from_build_info(self):
        out = self.run_against("llama-server", label="llama-server@b9000")
        self.assertError(out, "invalid_combination", "b9000", '"b8390"')
        self.assertEqual(out.hello["server"]["reported"]["total_slots"], 1)
        self.assertEqual(out.hello["build"]["build_info"], "b8390-6c2e1a0")

    def test_vllm_context_that_contradicts_max_model_len(self):
        out = self.run_against("vllm", coordinate={"ctx": "4096"})
        self.assertError(out, "invalid_combination", 'ctx = "4096"', "reports 512")

    def test_sglang_prefix_cache_that_contradicts_the_radix_cache(self):
        out = self.run_against("sglang", coordinate={"prefix_cache": "on"})
        self.assertError(out, "invalid_combination", 'prefix_cache = "on"', "reports off",
                         "disable_radix_cache")

    def test_ollama_refuses_teacher_forcing(self):
        out = self.run_against("ollama")
        self.assertError(out, "invalid_combination", "teacher_forced")

    def test_task_job_forms_are_refused_not_run_on_an_empty_prompt(self):
        chat = {"name": "tools", "kind": "generate", "max_tokens": 2,
                "messages": [{"role": "user", "content": "Which port?"}],
                "task": {"workload": "tools", "case": "c1"}}
        out = self.run_against("vllm", workload=chat)
        self.assertError(out, "invalid_combination", "workload tools", "chat messages")
        choice = {"name": "quiz", "kind": "teacher_forced", "context": "Q:",
                  "continuation": " A", "task": {"workload": "quiz", "case": "q", "choice": 0}}
        out = self.run_against("vllm", workload=choice)
        self.assertError(out, "invalid_combination", "workload quiz", "context + continuation")

    def test_ollama_before_logprobs_is_invalid_combination(self):
        out = self.run_against("ollama", {("GET", "/api/version"): (
            200, b'{"version": "0.12.3"}', "whole")}, label="ollama@0.12.3",
            workload={"name": "g", "kind": "generate", "prompt": "In the", "max_tokens": 2})
        self.assertError(out, "invalid_combination", "0.12.3", "0.12.11")

    def vllm_log(self, line):
        return self.server_log("vllm-server.log", [
            "INFO 12-04 10:00:01 [api_server.py:1896] vLLM API server version 0.11.0", line])

    def server_log(self, name, lines):
        folder = tempfile.mkdtemp(prefix="orch-server-log-")
        self.addCleanup(shutil.rmtree, folder)
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return {"mode": "launched", "log": path}

    # The lines of llama-model.cpp's "%s: %12s model buffer size = %8.2f MiB" after a load
    # with every layer offloaded to a CUDA GPU (the host keeps the input embeddings).
    CUDA_LOAD = ["load_tensors: offloading output layer to GPU",
                 "load_tensors: offloading 3 repeating layers to GPU",
                 "load_tensors: offloaded 5/5 layers to GPU",
                 "load_tensors:        CUDA0 model buffer size =     5.25 MiB",
                 "load_tensors:   CPU_Mapped model buffer size =     0.50 MiB"]

    def test_llama_server_hardware_the_launched_servers_log_contradicts(self):
        server = self.server_log("llama-server.log", self.CUDA_LOAD)
        out = self.run_against("llama-server", coordinate={"hardware": "cpu"}, server=server)
        self.assertError(out, "invalid_combination", 'hardware = "cpu"', "reports gpu",
                         "CUDA0 model buffer size")
        ok = self.run_against("llama-server", coordinate={"hardware": "gpu"}, server=server)
        self.assertEqual(ok.status, 0, (ok.error, ok.log))
        self.assertEqual(ok.hello["server"]["reported"]["from_log"]["hardware"], "gpu")

    def test_vllm_attention_the_launched_servers_log_contradicts_is_invalid_combination(self):
        server = self.vllm_log(
            "INFO 12-04 10:00:09 [cuda.py:403] Using FLASHINFER attention backend out of "
            "potential backends: ['FLASH_ATTN', 'FLASHINFER'].")
        out = self.run_against("vllm", coordinate={"attention": "flash_attn"}, server=server)
        self.assertError(out, "invalid_combination", 'attention = "flash_attn"',
                         "reports flashinfer", "Using FLASHINFER attention backend")
        self.assertEqual(out.hello["server"]["reported"]["from_log"]["attention"], "flashinfer")

    def test_vllm_attention_the_log_confirms_runs_and_is_recorded(self):
        server = self.vllm_log(
            "INFO 12-04 10:00:09 [cuda.py:403] Using FLASH_ATTN attention backend out of "
            "potential backends: ['FLASH_ATTN', 'FLASHINFER'].")
        for requested in ("flash_attn_2", "auto"):
            out = self.run_against("vllm", coordinate={"attention": requested}, server=server)
            self.assertEqual(out.status, 0, (requested, out.error, out.log))
            self.assertEqual(out.hello["server"]["reported"]["from_log"]["attention"],
                             "flash_attn")

    def test_vllm_top_k_over_max_logprobs_is_invalid_combination(self):
        out = self.run_against("vllm", {("POST", "/v1/completions"): (
            400, document("vllm-error-max-logprobs.json"), "whole")}, top_k=50)
        self.assertError(out, "invalid_combination", "capture.top_logits = 50", "at most 20")

    def test_an_http_error_names_the_url_status_and_body(self):
        out = self.run_against("sglang", {("GET", "/get_server_info"): (
            500, b'{"detail": "scheduler died"}' + b"x" * 400, "whole")})
        self.assertError(out, "engine_error", self.url + "/get_server_info", "HTTP 500",
                         "scheduler died")
        self.assertLess(len(out.error["message"]), 400)  # the body is cut at 200 bytes

    def test_a_truncated_answer_is_an_engine_error_naming_the_url(self):
        out = self.run_against("vllm", {("GET", "/version"): (
            200, document("vllm-version.json"), "truncated")})
        self.assertError(out, "engine_error", self.url + "/version")

    def test_a_malformed_answer_is_an_engine_error_naming_the_url(self):
        out = self.run_against("llama-server", {("GET", "/props"): (
            200, b'{"build_info": "b8390-6c2e1a0", "total_slots": ', "whole")})
        self.assertError(out, "engine_error", self.url + "/props", "not JSON")

    def test_an_unknown_server_version_is_an_engine_error(self):
        out = self.run_against("llama-server", {("GET", "/props"): (
            200, b'{"build_info": "unknown", "total_slots": 1}', "whole")})
        self.assertError(out, "engine_error", '"unknown"', "release")

    def test_an_unreachable_server_is_an_engine_error_naming_the_url(self):
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            url = "http://127.0.0.1:%d" % s.getsockname()[1]
        out = harness.run("vllm", harness.job("vllm@0.11.0", url))
        self.assertError(out, "engine_error", url + "/version", "connection refused")
        self.assertNotIn("Traceback", out.log)

    def test_a_job_without_a_server_is_invalid_job(self):
        job = harness.job("vllm@0.11.0", "")
        out = harness.run("vllm", job)
        self.assertError(out, "invalid_job", "no server", "[[servers]]")

    def test_full_rows_are_refused(self):
        workload = {"name": "w", "kind": "teacher_forced", "positions": 4, "tokens": TOKENS}
        job = harness.job("vllm@0.11.0", "http://127.0.0.1:1", workload=workload)
        job["capture"]["full_every"] = 2
        out = harness.run("vllm", job)
        self.assertError(out, "invalid_combination", "full_every")


class RecordsTest(ProcessBase):
    def check_records(self, out, expected):
        self.assertEqual(out.status, 0, out.error or out.log)
        self.assertEqual(len(out.records), len(expected))
        for (fields, top, _), want in zip(out.records, expected):
            self.assertEqual([i for i, _ in top], sorted(want[0], key=lambda i: (
                -want[1][want[0].index(i)], i)))
            self.assertTrue(fields["flags"] & 8)  # ROW_TOP_K_ONLY
            self.assertEqual(fields["target_id"], want[2])
            self.assertEqual(fields["input_token"], want[4])

    def test_vllm_teacher_forced_run(self):
        out = self.run_against("vllm")
        self.check_records(out, EXPECTED)
        self.assertEqual(out.done["capture_path"], "prompt-logprobs")
        (body,) = self.server.posts("/v1/completions")
        self.assertEqual(body["prompt"], TOKENS)

    def test_sglang_teacher_forced_run_gives_vllms_records(self):
        sglang_out = self.run_against("sglang")
        vllm_out = self.run_against("vllm")
        self.check_records(sglang_out, EXPECTED)
        self.assertEqual([top for _, top, _ in sglang_out.records],
                         [top for _, top, _ in vllm_out.records])


class Job:
    def __init__(self, job_id, settings):
        self.job_id = job_id
        self.settings = settings


class LoadMixTest(unittest.TestCase):
    def test_the_mix_is_a_function_of_the_seed(self):
        self.assertEqual(load_mod.mix(7), load_mod.mix(7))
        self.assertEqual(len(load_mod.mix(7)), load_mod.MIX_SIZE)
        self.assertTrue(set(load_mod.mix(7)) <= set(load_mod.TEXTS))
        mixes = {tuple(load_mod.mix(seed)) for seed in range(5)}
        self.assertGreater(len(mixes), 1)  # other seeds, other mixes
        self.assertEqual(len(load_mod.mix(3, 20)), 20)  # more streams than texts: cycles

    def test_the_seed_is_load_seed_or_derived_from_the_job_id(self):
        self.assertEqual(load_mod.seed_of(Job("a" * 32, {"load.seed": 5})), 5)
        derived = load_mod.seed_of(Job("a" * 32, {}))
        self.assertEqual(derived, load_mod.seed_of(Job("a" * 32, {})))
        self.assertNotEqual(derived, load_mod.seed_of(Job("b" * 32, {})))
        self.assertLessEqual(derived, 0xffffffff)

    def test_background_requests_set_every_sampling_field(self):
        job = Job("0" * 32, {"ctx": 512})
        path, body = llama_server.background_request("In the", 32, job, "m")
        self.assertEqual((path, body["prompt"], body["n_predict"]), ("/completion", "In the", 32))
        self.assertEqual((body["temperature"], body["top_k"], body["top_p"], body["min_p"]),
                         (0.0, 0, 1.0, 0.0))
        path, body = vllm.background_request("In the", 32, job, "m")
        self.assertEqual((path, body["max_tokens"], body["temperature"], body["top_k"]),
                         ("/v1/completions", 32, 0.0, -1))
        self.assertNotIn("prompt_logprobs", body)
        path, body = sglang.background_request("In the", 32, job, "m")
        self.assertEqual((path, body["text"], body["sampling_params"]["temperature"]),
                         ("/generate", "In the", 0.0))
        path, body = ollama.background_request("In the", 32, job, "m")
        self.assertEqual((path, body["options"]["num_ctx"], body["options"]["temperature"]),
                         ("/api/generate", 512, 0.0))

    def test_failures_fail_the_job_only_when_no_background_request_succeeded(self):
        def refuse(prompt):
            raise load_mod.EngineError("POST http://h/completion: HTTP 503")
        background = load_mod.Background(3, 1, refuse, "http://h")
        background.start()
        background.stop()
        with self.assertRaises(load_mod.EngineError) as caught:
            background.check()
        self.assertIn("http://h", caught.exception.message)
        self.assertIn("load.concurrency = 3", caught.exception.message)
        calls = []

        def half(prompt):
            calls.append(prompt)
            if len(calls) % 2:
                raise load_mod.EngineError("HTTP 503")
        background = load_mod.Background(3, 1, half, "http://h")
        background.start()
        while sum(background.completed) == 0:
            background.stop_event.wait(0.01)
        background.stop()
        background.check()  # some succeeded: the failures are counted, not fatal
        self.assertGreater(background.record()["failed"], 0)


class LoadedServer:
    """llama-server routes whose measured requests (token-id prompts) wait,
    bounded, until `streams` background requests (text prompts) are in flight,
    and whose background requests stay in flight until the next measured
    request has been answered."""

    def __init__(self, streams, measured_requests):
        self.streams = streams
        self.measured_requests = measured_requests
        self.cond = threading.Condition()
        self.background = 0
        self.answered = 0
        self.seen = []  # background requests in flight at each measured request

    def completion(self, body):
        with self.cond:
            if isinstance(body["prompt"], list):
                self.cond.wait_for(lambda: self.background >= self.streams, timeout=30)
                self.seen.append(self.background)
                self.answered += 1
                self.cond.notify_all()
                return 200, document("llama-server-completion.json"), "whole"
            self.background += 1
            self.cond.notify_all()
            start = self.answered
            self.cond.wait_for(lambda: self.answered > start or
                               self.answered >= self.measured_requests, timeout=30)
            self.background -= 1
            return 200, document("llama-server-completion.json"), "whole"

    def slots(self, body):
        with self.cond:
            busy = self.background
        return 200, json.dumps([{"id": i, "is_processing": i < busy}
                                for i in range(self.streams + 1)]).encode(), "whole"


class LoadProcessTest(ProcessBase):
    def test_background_requests_are_in_flight_while_the_measured_ones_run(self):
        fake = LoadedServer(3, len(TOKENS))
        out = self.run_against("llama-server", {("POST", "/completion"): fake.completion,
                                                ("GET", "/slots"): fake.slots},
                               coordinate={"load.concurrency": "4", "load.seed": "11"})
        self.assertEqual(out.status, 0, out.error or out.log)
        self.assertEqual(fake.seen, [3, 3, 3, 3])
        self.assertEqual(len(out.records), len(TOKENS))
        measured = [b for b in self.server.posts("/completion") if isinstance(b["prompt"], list)]
        self.assertEqual([b["prompt"] for b in measured],
                         [TOKENS[:j + 1] for j in range(len(TOKENS))])
        background = [b["prompt"] for b in self.server.posts("/completion")
                      if isinstance(b["prompt"], str)]
        self.assertTrue(set(background) <= set(load_mod.mix(11)))
        record = out.done["load"]
        self.assertEqual((record["concurrency"], record["seed"]), (4, 11))
        self.assertEqual(record["prompts"], [load_mod.describe(p) for p in load_mod.mix(11)])
        self.assertGreaterEqual(record["completed"], 3)
        self.assertEqual(record["in_flight_at_start"], 3)
        self.assertEqual(out.hello["load"]["prompts"], record["prompts"])

    def test_without_load_nothing_else_is_sent(self):
        out = self.run_against("llama-server")
        self.assertEqual(out.status, 0, out.error or out.log)
        self.assertEqual(out.done["load"], {"concurrency": 1})
        self.assertTrue(all(isinstance(b["prompt"], list)
                            for b in self.server.posts("/completion")))

    def test_every_background_request_failing_is_an_engine_error_naming_the_url(self):
        def completion(body):
            if isinstance(body["prompt"], list):
                return 200, document("llama-server-completion.json"), "whole"
            return 503, b'{"error": "busy"}', "whole"
        out = self.run_against("llama-server", {("POST", "/completion"): completion},
                               coordinate={"load.concurrency": "2"})
        self.assertError(out, "engine_error", self.url, "load.concurrency = 2", "HTTP 503")


class SessionTest(ProcessBase):
    def test_a_session_runs_every_job_and_no_earlier_server_reaches_a_failed_jobs_hello(self):
        with fake_server.FakeServer(routes("vllm")) as server:
            good = harness.job(LABELS["vllm"], server.url)
            status, outs, log = harness.run_session("vllm", [good, harness.job(LABELS["vllm"], ""),
                                                             good])
        self.assertEqual(status, 0, log)
        self.assertNotIn("Traceback", log)
        self.assertEqual(len(outs), 3, log)
        self.assertEqual([o.hello["session"] for o in outs],
                         [{"warm": False, "jobs_before": i} for i in range(3)])
        self.assertEqual(outs[1].error["code"], "invalid_job")
        self.assertNotIn("server", outs[1].hello)  # not the first job's server
        self.assertNotIn("version", outs[1].hello)
        self.assertEqual(outs[0].record_bytes, outs[2].record_bytes)
        self.assertEqual(len(outs[0].record_bytes), 4)

    def test_version_declares_no_load_axes(self):
        hello = json.loads(subprocess.run([harness.driver("vllm"), "version"],
                                          stdout=subprocess.PIPE, check=True,
                                          timeout=30).stdout)
        self.assertEqual(hello["session"], {"load_axes": []})


class CommandTest(unittest.TestCase):
    def test_version_names_the_family_and_no_version(self):
        for family in LABELS:
            out = subprocess.run([harness.driver(family), "version"], stdout=subprocess.PIPE,
                                 check=True, timeout=30).stdout
            hello = json.loads(out)
            self.assertEqual(hello["engine"], family)
            self.assertEqual(hello["driver"], "orch-driver-" + family)
            self.assertNotIn("version", hello)

    def test_checked_in_declarations_are_what_the_drivers_declare(self):
        for family in LABELS:
            printed = subprocess.run([harness.driver(family), "capabilities", "--json"],
                                     stdout=subprocess.PIPE, check=True,
                                     timeout=30).stdout.decode()
            path = os.path.join(harness.SOURCE, "planner", "declarations", family + ".json")
            if os.environ.get("ORCH_UPDATE_GOLDEN"):
                with open(path, "w") as f:
                    f.write(printed)
            with open(path) as f:
                self.assertEqual(printed, f.read(),
                                 "planner/declarations/%s.json is not the driver's output; "
                                 "regenerate it with `drivers/server/orch-driver-%s "
                                 "capabilities --json > planner/declarations/%s.json` and "
                                 "reconfigure" % (family, family, family))


if __name__ == "__main__":
    unittest.main()
