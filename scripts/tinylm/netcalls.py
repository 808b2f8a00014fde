"""The netcalls task: a short device config and a request in, one JSON tool call out
(docs/models.md, "The task model").

Every example is made from its own seed by a seeded random generator, so the data is the
same on every machine: training examples from seeds TRAIN_SEED_BASE + i, held-out ones
from HELDOUT_SEED_BASE + i (held_out drops any whose config text a training example
has). An example is rendered as ChatML text, user turn then the assistant's answer:

  <|im_start|>user
  interface GigabitEthernet0/0/1.201
   ip address 10.1.20.1/24
  interface Loopback0
   ip address 192.168.7.1/32
  service postgres port 5432
  which interface carries 10.1.20.1?<|im_end|>
  <|im_start|>assistant
  {"name": "show_interface", "arguments": {"interface": "GigabitEthernet0/0/1.201"}}

then the end-of-text token. The markers are ordinary text to the tokenizer (the vocabulary
has no special token for them), so the prompt llama.cpp renders from `messages` with
the model's ChatML template and a raw `prompt` holding the same text tokenize alike.

The tools (one request form each; argument order fixed):
  show_interface {interface}                  which interface carries ADDRESS?
  ping           {address}                    what address does INTERFACE have?
  check_port     {service, port}              what port does SERVICE listen on?
  open_port      {interface, address, port}   open SERVICE on the interface that carries ADDRESS

The forward variant drops show_interface and asks open_port by name, "open SERVICE on
INTERFACE": every value the call needs then follows its key in the config.

The site variant (docs/models.md, "The site task": the nearest task a model trained here
learns) keeps the four tools and the forward variant's requests, but every config is drawn
from one fixed site: 8 interfaces, each always with the same address and prefix, and 16
services, each on its well-known port. A model can then answer from what it learnt rather
than by copying a value it has never seen, and still has to name an interface, an address
and a port digit by digit.
"""
import json
import random

TRAIN_SEED_BASE = 1_000_000
HELDOUT_SEED_BASE = 9_000_000

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

TOOLS = ("show_interface", "ping", "check_port", "open_port")
# The forward variant: every value the call needs follows its key in the config (an
# address after its interface's name, a port after its service's name).
FORWARD_TOOLS = ("ping", "check_port", "open_port")
VARIANTS = ("full", "forward", "site")
SERVICES = ("postgres", "mysql", "redis", "ssh", "http", "https", "dns", "ntp", "snmp",
            "syslog", "ldap", "mongodb", "kafka", "grafana", "radius", "tftp")

# The site variant's fixed inventory: (interface, address, prefix length), and each
# service's well-known port. GigabitEthernet0/1/4 sits beside GigabitEthernet0/0/1.201 on
# purpose: the studies saw one come back as the other.
SITE_INTERFACES = (
    ("GigabitEthernet0/0/1.201", "10.1.20.1", 24),
    ("GigabitEthernet0/0/2", "10.1.30.1", 24),
    ("GigabitEthernet0/1/4", "10.1.40.1", 24),
    ("TenGigabitEthernet1/0/3", "172.16.4.2", 30),
    ("Loopback0", "192.168.7.1", 32),
    ("Vlan20", "10.20.0.1", 24),
    ("Vlan100", "192.168.100.1", 24),
    ("Port-channel7", "172.20.7.1", 24),
)
SITE_PORTS = {"postgres": 5432, "mysql": 3306, "redis": 6379, "ssh": 22, "http": 80,
              "https": 443, "dns": 53, "ntp": 123, "snmp": 161, "syslog": 514, "ldap": 389,
              "mongodb": 27017, "kafka": 9092, "grafana": 3000, "radius": 1812, "tftp": 69}


def _interface_name(r):
    kind = r.randrange(6)
    if kind <= 1:
        name = f"GigabitEthernet{r.randrange(2)}/{r.randrange(2)}/{r.randrange(1, 10)}"
        return name + (f".{r.randrange(10, 1000)}" if kind == 1 else "")
    if kind == 2:
        return f"TenGigabitEthernet{r.randrange(2)}/{r.randrange(2)}/{r.randrange(1, 10)}"
    if kind == 3:
        return f"Loopback{r.randrange(10)}"
    if kind == 4:
        return f"Vlan{r.randrange(2, 1000)}"
    return f"Port-channel{r.randrange(1, 50)}"


def _address(r):
    first = r.choice(("10", "172", "192"))
    if first == "10":
        head = f"10.{r.randrange(256)}"
    elif first == "172":
        head = f"172.{r.randrange(16, 32)}"
    else:
        head = "192.168"
    return f"{head}.{r.randrange(256)}.{r.randrange(1, 255)}"


def _distinct(r, make, n):
    out = []
    while len(out) < n:
        v = make(r)
        if v not in out:
            out.append(v)
    return out


class Example:
    """A config, a request and the expected call."""

    def __init__(self, seed, variant="full"):
        if variant not in VARIANTS:
            raise ValueError(f"netcalls variant {variant!r}: one of {', '.join(VARIANTS)}")
        r = random.Random(seed)
        self.seed, self.variant = seed, variant
        if variant == "site":
            chosen = r.sample(SITE_INTERFACES, r.randrange(2, 4))
            self.interfaces = [(name, address) for name, address, _ in chosen]
            prefixes = [prefix for _, _, prefix in chosen]
            services = r.sample(SERVICES, r.randrange(1, 3))
            self.services = [(s, SITE_PORTS[s]) for s in services]
        else:
            names = _distinct(r, _interface_name, r.randrange(2, 4))
            addresses = _distinct(r, _address, len(names))
            self.interfaces = list(zip(names, addresses))
            prefixes = [None] * len(names)
            services = r.sample(SERVICES, r.randrange(1, 3))
            ports = _distinct(r, lambda g: g.randrange(1, 65536), len(services))
            self.services = list(zip(services, ports))
        lines = []
        for (name, address), prefix in zip(self.interfaces, prefixes):
            prefix = prefix if prefix is not None else r.choice((24, 30, 32))
            lines += [f"interface {name}", f" ip address {address}/{prefix}"]
        lines += [f"service {s} port {p}" for s, p in self.services]
        self.config = "\n".join(lines)
        tools = FORWARD_TOOLS if variant == "forward" else TOOLS
        self.tool = tools[r.randrange(len(tools))]
        interface, address = r.choice(self.interfaces)
        service, port = r.choice(self.services)
        if self.tool == "show_interface":
            self.request = f"which interface carries {address}?"
            self.arguments = {"interface": interface}
        elif self.tool == "ping":
            self.request = f"what address does {interface} have?"
            self.arguments = {"address": address}
        elif self.tool == "check_port":
            self.request = f"what port does {service} listen on?"
            self.arguments = {"service": service, "port": port}
        elif variant != "full":
            self.request = f"open {service} on {interface}"
            self.arguments = {"interface": interface, "address": address, "port": port}
        else:
            self.request = f"open {service} on the interface that carries {address}"
            self.arguments = {"interface": interface, "address": address, "port": port}

    def user_message(self):
        return f"{self.config}\n{self.request}"

    def prompt(self):
        """The rendered ChatML prompt, up to and including the assistant's header."""
        return f"<|im_start|>user\n{self.user_message()}<|im_end|>\n<|im_start|>assistant\n"

    def answer(self):
        return json.dumps({"name": self.tool, "arguments": self.arguments})


def training(n, variant="full"):
    return [Example(TRAIN_SEED_BASE + i, variant) for i in range(n)]


def held_out(n, train_examples, variant="full"):
    """n held-out examples whose configs no training example has."""
    seen = {e.config for e in train_examples}
    out, i = [], 0
    while len(out) < n:
        e = Example(HELDOUT_SEED_BASE + i, variant)
        i += 1
        if e.config not in seen:
            out.append(e)
    return out
