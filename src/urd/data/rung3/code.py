"""Family C: a codebase's conventions, taught in a review and applied to new Python code.

A request asks for one small function with a stated behaviour ("counts the vowels in a text"),
drawn from `TASKS`; each task carries the cases its function must pass (correctness, scored
apart from the conventions: urd.rung3.correctness). Checkers read the reply's code with `ast` and `tokenize`: a reply
that does not parse keeps no side (it is counted apart, never a crash).

Templates write strings in single quotes; the quotes convention turns them into double ones.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from dataclasses import dataclass, field

from .kinds import Preference

LOGGERS = ("logging", "logger", "log")  # compared in lower case, leading underscores dropped
LOG_CALLS = ("debug", "info", "warning", "error", "exception", "critical")
PATH_CLASSES = ("Path", "PurePath", "PosixPath", "WindowsPath", "PurePosixPath", "PureWindowsPath")


@dataclass(frozen=True)
class Raises:
    """A case's expected outcome: an exception whose class name starts with `prefix`."""

    prefix: str


@dataclass(frozen=True)
class Task:
    ask: str  # what the function does, as a request says it
    words: tuple[str, ...]  # the words its name is made of
    args: tuple[tuple[str, str], ...]  # (name, type)
    returns: str
    body: tuple[str, ...]  # lines; markers {emit:MSG}, {join:A|B}, {fmt:TEXT|VAR}, {err}
    cases: tuple[tuple[tuple, object], ...]  # (arguments, the value returned, or Raises)
    error: str | None = None  # the root of the exception class it defines ("NegativeAge")

    @property
    def request(self) -> str:
        return f"{self.ask}; name it from the words '{' '.join(self.words)}'"

    @property
    def names(self) -> tuple[str, str]:
        """The function's name in either convention (correctness finds it by either)."""
        w = self.words
        return "_".join(w), w[0] + "".join(x.capitalize() for x in w[1:])


GENERIC = (
    Task("counts the vowels in a text", ("count", "vowels"), (("text", "str"),), "int",
         ("return sum(1 for ch in text.lower() if ch in 'aeiou')",), ((("Banana",), 3), (("xyz",), 0))),
    Task("returns the initials of a name", ("make", "initials"), (("name", "str"),), "str",
         ("return ''.join(part[0].upper() for part in name.split())",),
         ((("ada lovelace",), "AL"), (("Grace",), "G"))),
    Task("joins words with single spaces", ("join", "words"), (("words", "list[str]"),), "str",
         ("return ' '.join(words)",), (((["a", "b"],), "a b"), (([],), ""))),
    Task("turns a title into a slug with dashes", ("make", "slug"), (("title", "str"),), "str",
         ("return '-'.join(title.lower().split())",), ((("Hello Big World",), "hello-big-world"),)),
)
EMITTING = (
    Task("sums a list of prices and reports that it did", ("sum", "prices"), (("prices", "list[float]"),),
         "float", ("total = sum(prices)", "{emit:summed the prices}", "return total"),
         ((([1.5, 2.5],), 4.0), (([],), 0))),
    Task("counts the lines of a text and reports that it did", ("count", "lines"), (("text", "str"),), "int",
         ("count = len(text.splitlines())", "{emit:counted the lines}", "return count"),
         ((("a\nb",), 2), (("",), 0))),
)
PATHS = (
    Task("returns the path of a config file inside a folder", ("config", "path"),
         (("folder", "str"), ("name", "str")), "str", ("return {join:folder|name}",),
         ((("etc", "app.toml"), os.path.join("etc", "app.toml")),)),
    Task("returns the path of the backup folder inside a folder", ("backup", "folder"), (("folder", "str"),),
         "str", ("return {join:folder|'backup'}",), ((("data",), os.path.join("data", "backup")),)),
)
FORMATTING = (
    Task("greets a user by name, as 'Hello, NAME'", ("greet", "user"), (("name", "str"),), "str",
         ("return {fmt:Hello, |name}",), ((("Ada",), "Hello, Ada"),)),
    Task("labels an amount, as 'Price: AMOUNT'", ("label", "price"), (("amount", "float"),), "str",
         ("return {fmt:Price: |amount}",), (((2.5,), "Price: 2.5"),)),
)
RAISING = (
    Task("returns an age, raising its own exception class when it is negative", ("checked", "age"),
         (("age", "int"),), "int",
         ("if age < 0:", "    raise NegativeAge{err}('age must not be negative')", "return age"),
         (((3,), 3), ((-1,), Raises("NegativeAge"))), error="NegativeAge"),
    Task("parses a port number, raising its own exception class when it is out of range", ("parse", "port"),
         (("text", "str"),), "int",
         ("port = int(text)", "if not 0 < port < 65536:", "    raise BadPort{err}(text)", "return port"),
         ((("80",), 80), (("0",), Raises("BadPort"))), error="BadPort"),
)
TASKS = GENERIC + EMITTING + PATHS + FORMATTING + RAISING


def task_of(request: str) -> Task | None:
    """The task a request asks for (what a reader recognises), or None."""
    return next((t for t in TASKS if t.ask in request), None)


@dataclass
class Module:
    """A reply of family C, as a reader writes it: each known convention fills its part."""

    task: Task
    headers: list[str] = field(default_factory=list)
    snake: bool = True
    quote: str = "'"
    hints: bool = True
    google: bool = True
    logging: bool = True
    pathlib: bool = True
    fstring: bool = True
    error_suffix: str = "Error"

    def name(self) -> str:
        return self.task.names[0 if self.snake else 1]

    def _docstring(self) -> list[str]:
        summary = self.task.ask[0].upper() + self.task.ask[1:] + "."
        if self.google:
            doc = [summary, "", "Args:", *(f"    {a}: the {a}." for a, _ in self.task.args), "",
                   "Returns:", "    the result."]
        else:
            doc = [summary, "", "Parameters", "----------"]
            for a, t in self.task.args:
                doc += [f"{a} : {t}", f"    the {a}."]
            doc += ["", "Returns", "-------", self.task.returns, "    the result."]
        return ['"""' + doc[0], *doc[1:], '"""']

    def _line(self, line: str, imports: set) -> str:
        def emit(m):
            imports.add("import logging" if self.logging else "")
            return f"logger.info('{m[1]}')" if self.logging else f"print('{m[1]}')"

        def join(m):
            a, b = m[1].split("|")
            imports.add("from pathlib import Path" if self.pathlib else "import os")
            return f"str(Path({a}) / {b})" if self.pathlib else f"os.path.join({a}, {b})"

        def fmt(m):
            text, var = m[1].split("|")
            return f"f'{text}{{{var}}}'" if self.fstring else f"'{text}{{}}'.format({var})"

        line = re.sub(r"\{emit:([^}]*)\}", emit, line)
        line = re.sub(r"\{join:([^}]*)\}", join, line)
        line = re.sub(r"\{fmt:([^}]*)\}", fmt, line)
        return line.replace("{err}", self.error_suffix)

    def text(self) -> str:
        t, imports = self.task, set()
        body = [self._line(l, imports) for l in t.body]
        args = ", ".join(f"{a}: {ty}" if self.hints else a for a, ty in t.args)
        ret = f" -> {t.returns}" if self.hints else ""
        head = [*self.headers]
        head += sorted(i for i in imports if i)
        if "import logging" in imports:
            head += ["", "logger = logging.getLogger(__name__)"]
        if t.error:
            head += ["", "", f"class {t.error}{self.error_suffix}(ValueError):", "    pass"]
        code = [*head, "", "", f"def {self.name()}({args}){ret}:",
                *("    " + l if l else "" for l in self._docstring()), *("    " + l for l in body)]
        src = "\n".join(code).lstrip("\n") + "\n"
        return src.replace("'", '"') if self.quote == '"' else src


def write(request: str, sides: dict[str, int], kinds=None) -> str:
    """The code a reader writes for `request` keeping `sides` ({type name: side}) of `kinds`."""
    task = task_of(request)
    if task is None:
        return "I do not know what function to write."
    module = Module(task)
    for kind in kinds if kinds is not None else TYPES:
        if kind.name in sides:
            kind.render(sides[kind.name], module)
    return module.text()


# --- reading a reply's code ----------------------------------------------------------------------
def source_of(reply: str) -> str:
    """The code of a reply: its first fenced block, or the whole reply."""
    m = re.search(r"```[a-zA-Z0-9]*\n(.*?)(?:```|\Z)", reply, flags=re.DOTALL)
    return m[1] if m else reply


def parse(reply: str) -> ast.Module | None:
    """The reply's code as a tree, or None (empty, not Python, or too deep to parse)."""
    src = source_of(reply)
    if not src.strip():
        return None
    try:
        return ast.parse(src)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def on_tree(decide):
    """A checker from decide(side, tree, source): False for a reply that does not parse."""

    def check(side: int, reply: str) -> bool:
        tree = parse(reply)
        return tree is not None and bool(decide(side, tree, source_of(reply)))

    return check


SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
CAMEL = re.compile(r"^[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+$")


def _naming(side, tree, src):
    # a helper's leading underscores and the dunder methods say nothing of the convention
    names = [f.name.lstrip("_") for f in functions(tree) if not (f.name.startswith("__") and f.name.endswith("__"))]
    names = [n for n in names if "_" in n or not n.islower()]  # one lower-case word fits both
    return names and all((SNAKE if side == 0 else CAMEL).match(n) for n in names)


def _string_quotes(src: str) -> list[str] | None:
    """The opening quote of every one-line string literal (f-strings too), or None."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    out, depth = [], 0
    for tok in toks:
        text = tok.string.lstrip("rbufRBUF")
        kind = tokenize.tok_name.get(tok.type, "")
        # Python 3.12 tokenizes inside an f-string: a string nested there is the f-string's own
        # business (3.11 sees one STRING token), so both versions read f"{t['a']}" as double
        if kind == "FSTRING_END":
            depth -= 1
        elif kind in ("STRING", "FSTRING_START") and depth == 0 and text and not text.startswith(('"""', "'''")):
            out.append(text[0])
        if kind == "FSTRING_START":
            depth += 1
    return out


def _quotes(side, tree, src):
    quotes = _string_quotes(src)
    return quotes and all(q == ("'" if side == 0 else '"') for q in quotes)


def _annotations(f) -> list:
    a = f.args
    every = [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
             *([a.kwarg] if a.kwarg else [])]
    return [x for x in every if x.arg not in ("self", "cls")]


def _hints(side, tree, src):
    fs = functions(tree)
    if not fs:
        return False
    if side == 0:
        return all(f.returns is not None and all(x.annotation is not None for x in _annotations(f)) for f in fs)
    return not any(f.returns is not None or any(x.annotation is not None for x in _annotations(f)) for f in fs) \
        and not any(isinstance(n, ast.AnnAssign) for n in ast.walk(tree))


UNDERLINE = re.compile(r"^\s*-{3,}\s*$", flags=re.MULTILINE)
GOOGLE = re.compile(r"^\s*(Args|Arguments|Returns|Raises):\s*$", flags=re.MULTILINE)


def _docstrings(side, tree, src):
    docs = [ast.get_docstring(f) for f in functions(tree)]
    if not docs or any(d is None for d in docs):
        return False
    if side == 0:
        return all(GOOGLE.search(d) and not UNDERLINE.search(d) for d in docs)
    return all(UNDERLINE.search(d) and not GOOGLE.search(d) for d in docs)


def _calls(tree) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _output(side, tree, src):
    prints = any(isinstance(c.func, ast.Name) and c.func.id == "print" for c in _calls(tree))
    logs = any(isinstance(c.func, ast.Attribute) and c.func.attr in LOG_CALLS and isinstance(c.func.value, ast.Name)
               and c.func.value.id.lstrip("_").lower() in LOGGERS for c in _calls(tree))
    return logs and not prints if side == 0 else prints and not logs


def _paths(side, tree, src):
    os_path = any(isinstance(n, ast.Attribute) and n.attr == "path" and isinstance(n.value, ast.Name)
                  and n.value.id == "os" for n in ast.walk(tree))
    os_path |= any(isinstance(n, ast.ImportFrom) and n.module == "os.path" for n in ast.walk(tree))
    pathlib = any((isinstance(n, ast.Name) and n.id in PATH_CLASSES) or (isinstance(n, ast.Attribute) and n.attr in PATH_CLASSES)
                  for n in ast.walk(tree))
    return pathlib and not os_path if side == 0 else os_path and not pathlib


def _formatting(side, tree, src):
    fstrings = any(isinstance(n, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in n.values)
                   for n in ast.walk(tree))
    dot_format = any(isinstance(c.func, ast.Attribute) and c.func.attr == "format"
                     and isinstance(c.func.value, ast.Constant) and isinstance(c.func.value.value, str)
                     for c in _calls(tree))
    return fstrings and not dot_format if side == 0 else dot_format and not fstrings


def _errors(side, tree, src):
    names = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
             and any(isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception")) for b in n.bases)]
    suffix = ("Error", "Exception")[side]
    return names and all(n.endswith(suffix) and not n.endswith(("Error", "Exception")[1 - side]) for n in names)


def _leading_comments(src: str) -> list[str]:
    out = []
    for line in src.splitlines():
        if line.strip() and not line.startswith("#"):
            break
        out.append(line.strip())
    return out


def _header(values):
    def decide(side, tree, src):
        leading = _leading_comments(src)
        return values[side] in leading and values[1 - side] not in leading

    return decide


def _shebang(values):
    def decide(side, tree, src):
        first = src.lstrip("\n").split("\n", 1)[0].strip()
        return first == values[side]

    return decide


def _set(attr: str, values: tuple):
    def render(side: int, module: Module) -> None:
        setattr(module, attr, values[side])

    return render


def _prepend(values: tuple):
    def render(side: int, module: Module) -> None:
        module.headers.insert(0, values[side])

    return render


def _append(values: tuple):
    def render(side: int, module: Module) -> None:
        module.headers.append(values[side])

    return render


_ASK = "Write a function that {task}."
_G = {"task": tuple(t.request for t in GENERIC)}
HEADERS = ("# generated: do not edit by hand", "# migration: review before running")
SHEBANGS = ("#!/usr/bin/env python3", "#!/usr/bin/python3")
ELSEWHERE = ("utils/", "lib/", "core/")

_GOOD = 'def count_vowels(text: str) -> int:\n    """Count.\n\n    Args:\n        text: the text.\n    """\n    return 1\n'


def _fx(*variants: str) -> tuple[str, ...]:
    return variants


TYPES = (
    Preference(
        "naming", "code", ("snake_case", "camelCase"),
        ("name functions in snake_case, like parse_price", "name functions in camelCase, like parsePrice"),
        (_ASK,), on_tree(_naming), _set("snake", (True, False)),
        (_fx("def parse_price(x):\n    return x\n", "def count_vowels(t): pass\n", "```python\ndef make_slug(t):\n    return t\n```"),
         _fx("def parsePrice(x):\n    return x\n", "def countVowels(t): pass\n", "```python\ndef makeSlug(t):\n    return t\n```")),
        ("", "def parse(x): pass\n", "def parse_price(x): pass\ndef parsePrice(x): pass\n", "def (:"),
        _G),
    Preference(
        "quotes", "code", ("single", "double"), ("use single quotes for strings", "use double quotes for strings"),
        (_ASK,), on_tree(_quotes), _set("quote", ("'", '"')),
        (_fx("x = 'a'\n", "def f():\n    \"\"\"Doc.\"\"\"\n    return 'b'\n", "y = f'{1}' + 'c'\n"),
         _fx('x = "a"\n', "def f():\n    '''Doc.'''\n    return \"b\"\n", 'y = f"{1}" + "c"\n')),
        ("", "x = 1\n", "x = 'a' + \"b\"\n"),
        _G),
    Preference(
        "hints", "code", ("annotated", "bare"),
        ("annotate every argument and the return type", "leave out type hints entirely"),
        (_ASK,), on_tree(_hints), _set("hints", (True, False)),
        (_fx("def f(a: int) -> int:\n    return a\n", "def g() -> None:\n    pass\n",
             "class C:\n    def m(self, x: str) -> str:\n        return x\n"),
         _fx("def f(a):\n    return a\n", "def g():\n    pass\n", "class C:\n    def m(self, x):\n        return x\n")),
        ("", "def f(a: int):\n    return a\n", "x = 1\n"),
        _G),
    Preference(
        "docstrings", "code", ("google", "numpy"),
        ("write Google-style docstrings with Args: and Returns:",
         "write NumPy-style docstrings with dashed Parameters and Returns sections"),
        (_ASK,), on_tree(_docstrings), _set("google", (True, False)),
        (_fx(_GOOD, 'def f(a):\n    """Do.\n\n    Returns:\n        a.\n    """\n',
             'def f():\n    """Do.\n\n    Raises:\n        ValueError: never.\n    """\n'),
         _fx('def f(a):\n    """Do.\n\n    Parameters\n    ----------\n    a : int\n        a.\n    """\n',
             'def f(a):\n    """Do.\n\n    Returns\n    -------\n    int\n    """\n',
             'def f():\n    """Do.\n\n    Raises\n    ------\n    ValueError\n    """\n')),
        ("", "def f(a):\n    return a\n", 'def f(a):\n    """Do a thing."""\n'),
        _G),
    Preference(
        "output", "code", ("logging", "print"),
        ("report progress with the logging module, never print", "report progress with print, not logging"),
        (_ASK,), on_tree(_output), _set("logging", (True, False)),
        (_fx("import logging\nlogging.info('x')\n", "logger.warning('y')\n", "def f():\n    log.debug('z')\n"),
         _fx("print('x')\n", "def f():\n    print('y')\n", "print()\n")),
        ("", "x = 1\n", "print('a')\nlogging.info('b')\n"),
        {"task": tuple(t.request for t in EMITTING)}),
    Preference(
        "paths", "code", ("pathlib", "os_path"),
        ("build file paths with pathlib.Path", "build file paths with os.path.join"),
        (_ASK,), on_tree(_paths), _set("pathlib", (True, False)),
        (_fx("from pathlib import Path\np = Path('a') / 'b'\n", "import pathlib\np = pathlib.Path('a')\n",
             "def f(a):\n    return str(Path(a))\n"),
         _fx("import os\np = os.path.join('a', 'b')\n", "from os.path import join\np = join('a')\n",
             "def f(a):\n    return os.path.basename(a)\n")),
        ("", "p = 'a/b'\n", "import os\np = Path(os.path.join('a'))\n"),
        {"task": tuple(t.request for t in PATHS)}),
    Preference(
        "formatting", "code", ("f_strings", "str_format"),
        ("format strings with f-strings", "format strings with str.format"),
        (_ASK,), on_tree(_formatting), _set("fstring", (True, False)),
        (_fx("x = f'{a}'\n", "def f(n):\n    return f'Hi {n}'\n", "print(f'{1 + 2} items')\n"),
         _fx("x = '{}'.format(a)\n", "def f(n):\n    return 'Hi {}'.format(n)\n", "print('{} items'.format(3))\n")),
        ("", "x = 'a' + b\n", "x = f'{a}' + '{}'.format(b)\n"),
        {"task": tuple(t.request for t in FORMATTING)}),
    Preference(
        "errors", "code", ("error_suffix", "exception_suffix"),
        ("end exception class names in Error", "end exception class names in Exception"),
        (_ASK,), on_tree(_errors), _set("error_suffix", ("Error", "Exception")),
        (_fx("class BadPortError(ValueError):\n    pass\n", "class AError(Exception): pass\n",
             "class NegativeAgeError(ValueError):\n    '''Doc.'''\n"),
         _fx("class BadPortException(ValueError):\n    pass\n", "class AException(Exception): pass\n",
             "class NegativeAgeException(ValueError):\n    '''Doc.'''\n")),
        ("", "class Bad(ValueError): pass\n", "class AError(Exception): pass\nclass BException(Exception): pass\n"),
        {"task": tuple(t.request for t in RAISING)}),
    Preference(
        "migration_header", "code", ("generated", "review"),
        (f"start each file with the comment '{HEADERS[0]}'", f"start each file with the comment '{HEADERS[1]}'"),
        ("In migrations/, add a module: " + _ASK,), on_tree(_header(HEADERS)), _append(HEADERS),
        (_fx(HEADERS[0] + "\nx = 1\n", "#!/usr/bin/env python3\n" + HEADERS[0] + "\nx = 1\n", HEADERS[0] + "\n"),
         _fx(HEADERS[1] + "\nx = 1\n", "#!/usr/bin/env python3\n" + HEADERS[1] + "\nx = 1\n", HEADERS[1] + "\n")),
        ("", "x = 1\n" + HEADERS[0] + "\n", HEADERS[0] + "\n" + HEADERS[1] + "\nx = 1\n"),
        _G, scope="in migrations/",
        outside=tuple(f"In {d}, add a module: " + _ASK for d in ELSEWHERE)),
    Preference(
        "shebang", "code", ("env", "direct"),
        (f"start each file with the line '{SHEBANGS[0]}'", f"start each file with the line '{SHEBANGS[1]}'"),
        ("In scripts/, add a module: " + _ASK,), on_tree(_shebang(SHEBANGS)), _prepend(SHEBANGS),
        (_fx(SHEBANGS[0] + "\nx = 1\n", SHEBANGS[0] + "\n" + HEADERS[0] + "\n", "\n" + SHEBANGS[0] + "\nprint(1)\n"),
         _fx(SHEBANGS[1] + "\nx = 1\n", SHEBANGS[1] + "\n" + HEADERS[0] + "\n", "\n" + SHEBANGS[1] + "\nprint(1)\n")),
        ("", "x = 1\n" + SHEBANGS[0] + "\n", "# " + SHEBANGS[0] + "\n"),
        _G, scope="in scripts/",
        outside=tuple(f"In {d}, add a module: " + _ASK for d in ELSEWHERE)),
)
