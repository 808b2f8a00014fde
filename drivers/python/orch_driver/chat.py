"""Chat messages rendered into a prompt with the model's chat template
(docs/driver-protocol.md, "Chat messages"), the text llama.cpp's
llama_chat_apply_template(template, messages, add_ass=true) gives, so that a
Python driver and the llama.cpp driver prompt the model with the same bytes.

llama.cpp does not run the template (Jinja): it detects a built-in family
from the template text and formats the messages itself. This module renders
the ChatML family, detected as llama.cpp detects it (the name "chatml", or a
text holding "<|im_start|>" and neither "<|im_sep|>" (phi4) nor
"<end_of_utterance>" (SmolVLM)). Any other template is refused with
InvalidCombination, never rendered as some other family.
"""

import hashlib

from orch_driver.errors import InvalidCombination

TEMPLATE_KEY = "tokenizer.chat_template"


def template_sha256(template):
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def _opening(template):
    opening = template[:60].replace("\n", " ").replace("\r", " ")
    return opening + ("..." if len(template) > 60 else "")


def is_chatml(template):
    """Whether llama.cpp's detection gives the ChatML family for `template`."""
    if template == "chatml":
        return True
    return ("<|im_start|>" in template and "<|im_sep|>" not in template and
            "<end_of_utterance>" not in template)


def render(template, messages, model):
    """The prompt for `messages` ([(role, content)]) under `template` (the
    model's tokenizer.chat_template, None when it has none), ending with the
    assistant turn's opening. InvalidCombination naming `model` (its path)
    when there is no template or it is not ChatML."""
    if not template:
        raise InvalidCombination(
            "workload messages: the model %s has no chat template (GGUF key %s); give the "
            "workload a prompt instead, or use a model with a template" % (model, TEMPLATE_KEY))
    if not is_chatml(template):
        raise InvalidCombination(
            'workload messages: the chat template of the model %s (sha256 %s, "%s") is not '
            "ChatML, the one template family this driver renders (as llama.cpp's "
            "llama_chat_apply_template does); give the workload a prompt instead"
            % (model, template_sha256(template), _opening(template)))
    turns = ["<|im_start|>%s\n%s<|im_end|>\n" % (role, content) for role, content in messages]
    return "".join(turns) + "<|im_start|>assistant\n"


def done_fields(template, rendered):
    """What `done` gains for a generation from messages."""
    return {"chat_template": {"source": "model", "sha256": template_sha256(template)},
            "rendered_prompt": rendered}
