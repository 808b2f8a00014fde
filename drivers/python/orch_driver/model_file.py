"""The model file a job names: present (model_missing otherwise) and, for a
sha256: requirement, the file whose SHA-256 the requirement names
(sha256_mismatch otherwise). Same rules and messages as the llama.cpp
driver's PrepareModel (drivers/llamacpp/model_file.cc)."""

import hashlib
import os
import re

from orch_driver.errors import InvalidJob, ModelMissing, Sha256Mismatch

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


def sha256_of_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_model(model):
    """(path, sha256) of the file to run; raises the typed errors."""
    if not model.path:
        raise ModelMissing('model "%s" is not on this agent (searched its '
                           'model_dirs)' % model.requirement)
    if not os.path.isfile(model.path):
        raise ModelMissing("model file %s does not exist" % model.path)
    expected = ""
    if model.requirement.startswith("sha256:"):
        expected = model.requirement[7:]
        if not _HEX64.match(expected):
            raise InvalidJob('model.requirement: "%s" is not sha256: followed '
                             'by 64 hex digits' % model.requirement)
        expected = expected.lower()
    sha = model.sha256 or sha256_of_file(model.path)
    if expected and sha != expected:
        raise Sha256Mismatch("model %s has sha256 %s, the job requires %s"
                             % (model.path, sha, expected))
    return model.path, sha
