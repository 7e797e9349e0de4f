#!/usr/bin/env bash
# Checks the size rule (issue 32): no source file longer than 600 lines and no function longer
# than 80, except tables. Prints each breach as file:line and its length and exits 1 when there
# is one. Usage: check_sizes.sh [ROOT]
#
# What counts:
#   - files: every tracked .h, .cc, .cu, .cuh and .proto file (git ls-files; find without git);
#     its length in lines.
#   - functions: every function body in a .h, .cc, .cu or .cuh file, at namespace or class scope
#     (member functions defined in a class too), counted from the first line of its signature
#     (template line included, leading comments not) to its closing brace. Lambdas inside a
#     function are part of it. A lambda written at namespace scope (a kernel or shape-function
#     lambda in a registration statement, `const auto f = [] {...};`) counts on its own, from
#     its opening brace to its closing one. A TEST_CASE is a function like any other, its
#     SECTIONs included (they share its setup): one past 80 lines moves its checks into named
#     helper functions, or becomes several TEST_CASEs sharing a fixture; it is not exempted.
#   - tables are exempt: a comment `// check_sizes: table` in the comment block right above a
#     function (or namespace-scope lambda statement) exempts it, and `// check_sizes: table file`
#     in a file's first 30 lines exempts the file's length. Use them for data (case lists,
#     lookup tables, registration lists), never for logic; say why in the same comment.
#
# Brace matching skips comments, string and character literals (raw strings too) and
# preprocessor lines, so the code needs no particular layout beyond compiling.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

max_file_lines=600
max_function_lines=80

# Files being split on another branch may be listed here for the time being: they are reported
# as "allowed" and do not fail the check. Empty: every file keeps the limits.
allowed=(
)

if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.h' '*.cc' '*.cu' '*.cuh' '*.proto' | sort)
else
  mapfile -t files < <(find . -path ./build -prune -o -path './build-*' -prune -o -type f \
    \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' -o -name '*.proto' \) \
    -print | sed 's@^\./@@' | sort)
fi

python3 - "$max_file_lines" "$max_function_lines" "${#allowed[@]}" "${allowed[@]}" \
  "${files[@]}" << 'PY'
import re
import sys

max_file, max_fn, n_allowed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
allowed = set(sys.argv[4:4 + n_allowed])
files = sys.argv[4 + n_allowed:]
MARKER = "check_sizes: table"


def tokens(text):
    """Yields (char, line) for every brace, paren, bracket, ';', ':', '=', ',' and every word
    outside comments, literals and preprocessor lines. Words come as (word, line)."""
    i, n, line = 0, len(text), 1
    at_line_start = True
    word = re.compile(r"[A-Za-z_0-9]+")
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            at_line_start = True
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if at_line_start and c == "#":  # preprocessor line, with continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    line += 1
                    i += 1
                i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^(\s]*)\(', text[i:i + 24])
        if m:  # raw string literal
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            line += text.count("\n", i, end)
            i = end
            continue
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n":  # unterminated: give up on this literal
                    break
                j += 1
            i = j + 1
            continue
        m = word.match(text, i)
        if m:
            yield m.group(0), line
            i = m.end()
            continue
        if text.startswith("::", i):
            yield "::", line
            i += 2
            continue
        yield c, line
        i += 1


class Parser:
    def __init__(self, path, text):
        self.path = path
        self.toks = list(tokens(text))
        self.lines = text.split("\n")
        self.pos = 0
        self.found = []  # (line, length, what)

    def marked(self, first_line):
        """True when the comment block right above first_line carries the table marker."""
        k = first_line - 2  # index of the line above
        while k >= 0:
            s = self.lines[k].strip()
            if not (s.startswith("//") or s.startswith("/*") or s.startswith("*")):
                break
            if MARKER in s:
                return True
            k -= 1
        return False

    def skip_block(self):
        """pos is at '{'; moves past its matching '}' and returns that brace's line."""
        depth = 0
        while self.pos < len(self.toks):
            t, ln = self.toks[self.pos]
            self.pos += 1
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if depth == 0:
                    return ln
        return self.toks[-1][1] if self.toks else 0

    def header_start(self, header):
        """First line of a signature: the run of consecutive lines ending at its last token
        (a blank or comment-only line ends a signature in clang-formatted code)."""
        start = header[-1][1]
        for _, ln in reversed(header):
            if ln < start - 1:
                break
            start = min(start, ln)
        return start

    def record(self, first, last, what, marker_line=None):
        length = last - first + 1
        if length > max_fn and not self.marked(marker_line or first):
            self.found.append((first, length, what))

    def scope(self, kind):
        """Parses declarations until the '}' closing this scope (or the end of the file)."""
        header = []  # tokens since the last declaration ended
        parens = 0
        while self.pos < len(self.toks):
            t, ln = self.toks[self.pos]
            if t == "}" and parens == 0:
                self.pos += 1
                return
            if t in "([":
                parens += 1
            elif t in ")]":
                parens = max(0, parens - 1)
            if t == ";" and parens == 0:
                header = []
                self.pos += 1
                continue
            if t == ":" and parens == 0 and kind == "class" and len(header) == 1 and \
                    header[0][0] in ("public", "private", "protected"):
                header = []
                self.pos += 1
                continue
            if t != "{":
                header.append((t, ln))
                self.pos += 1
                continue
            if parens > 0:  # a lambda (or braced argument) inside a namespace-scope statement
                first = ln
                last = self.skip_block()
                if is_lambda(header):
                    self.record(first, last, "lambda in " + describe(header),
                                self.header_start(header))
                continue
            if not self.block(header, kind):  # else a member initializer: the header goes on
                header = []
                parens = 0

    def block(self, header, kind):
        """pos is at a '{' at paren depth 0 after header: a scope, a function body or data.
        Returns true when it was a braced member initializer, so the header goes on."""
        words = strip_template([t for t, _ in header])
        first_word = words[0] if words else ""
        if first_word in ("namespace", "extern") and "(" not in words:
            self.pos += 1
            self.scope("namespace")
            self.end_statement()
            return False
        if first_word in ("class", "struct", "union") and not ends_like_function(words):
            self.pos += 1
            self.scope("class")
            self.end_statement()  # the declarator list up to ';'
            return False
        if ends_like_function(words) and not is_initializer(words):
            # A constructor's braced member initializers (`a_{x},`) are not its body.
            if has_init_list(words) and self.braced_member_init():
                header.append(self.toks[self.pos - 1])
                return True
            first = self.header_start(header)
            last = self.skip_block()
            self.record(first, last, describe(header))
            return False
        first = self.toks[self.pos][1]
        last = self.skip_block()  # data: an initializer, an enum; lambdas are functions
        if is_lambda(header):
            self.record(first, last, "lambda in " + describe(header), self.header_start(header))
        return False

    def braced_member_init(self):
        """At a '{' in a constructor's initializer list: true (and skips it) when the matching
        '}' is followed by ',' or '{', i.e. it initializes a member rather than opening the
        body."""
        save = self.pos
        self.skip_block()
        nxt = self.toks[self.pos][0] if self.pos < len(self.toks) else ""
        if nxt in (",", "{"):
            return True
        self.pos = save
        return False

    def end_statement(self):
        """After a class or namespace body: skips declarators up to ';' when there are any."""
        if self.pos < len(self.toks) and self.toks[self.pos][0] == ";":
            self.pos += 1


def strip_template(words):
    while words and words[0] == "template":
        depth, k = 0, 1
        for k in range(1, len(words)):
            if words[k] == "<":
                depth += 1
            elif words[k] == ">":
                depth -= 1
                if depth == 0:
                    break
        words = words[k + 1:]
    return words


QUALIFIERS = {"const", "override", "final", "noexcept", "mutable", "volatile", "try", "&", "*"}


def ends_like_function(words):
    """The header ends with a parameter list, maybe followed by qualifiers, a trailing return
    type, or a constructor's member initializers."""
    if "(" not in words:
        return False
    depth = 0
    for k, w in enumerate(words):
        if w in "([":
            depth += 1
        elif w in ")]":
            depth -= 1
        elif w == ":" and depth == 0 and k > 0 and words[k - 1] == ")":
            return True  # constructor initializer list follows
    k = len(words) - 1
    while k >= 0 and words[k] in QUALIFIERS:
        k -= 1
    if k >= 0 and words[k] == ")":
        return True
    if "->" in "".join(words) or "-" in words:  # trailing return type
        return ")" in words
    return False


def has_init_list(words):
    return any(w == ":" and k > 0 and words[k - 1] == ")" for k, w in enumerate(words))


def is_initializer(words):
    """`T x = ...{` or `T x[] = {`: an '=' at paren depth 0 before any parameter list."""
    depth = 0
    for w in words:
        if w in "([":
            if w == "(" and depth == 0:
                return False
            depth += 1
        elif w in ")]":
            depth -= 1
        elif w == "=" and depth == 0:
            return True
    return False


def is_lambda(header):
    words = [t for t, _ in header]
    return "[" in words and words and words[-1] in (")", "]", "mutable") or \
        ("[" in words and ")" in words and words[-1] not in ("=", ",", "("))


def describe(header):
    """A short name for a function: the word before its first '(' (TEST_CASE: its name)."""
    words = [t for t, _ in header]
    if "(" in words:
        k = words.index("(")
        name = words[k - 1] if k > 0 else "?"
        if k >= 3 and words[k - 2] == "::":
            name = words[k - 3] + "::" + name
        return name
    return words[0] if words else "?"


status = 0
for path in files:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        continue
    problems = []
    n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    head = "\n".join(text.split("\n")[:30])
    if n_lines > max_file and MARKER + " file" not in head:
        problems.append(f"{path}:1: file is {n_lines} lines (limit {max_file})")
    if not path.endswith(".proto"):
        p = Parser(path, text)
        while p.pos < len(p.toks):
            p.scope("namespace")  # a stray '}' at file scope ends one pass; go on
        for line, length, what in p.found:
            problems.append(f"{path}:{line}: function {what} is {length} lines "
                            f"(limit {max_fn})")
    for problem in problems:
        if path in allowed:
            print("allowed (being split elsewhere): " + problem)
        else:
            print(problem)
            status = 1
if status == 0:
    print(f"sizes: {len(files)} files checked: none past {max_file} lines, no function past "
          f"{max_fn} (besides {len(allowed)} allowlisted files)")
sys.exit(status)
PY
