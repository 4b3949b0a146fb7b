"""CoNLL-U reading, validation and writing, line-exact.

The parser sees the basic tree of each sentence: its integer-ID lines (``1..n``) with FORM, LEMMA,
UPOS, XPOS, FEATS, HEAD and DEPREL. Every other line (comments, multiword-token lines ``3-4``,
empty nodes ``5.1``) and every other column (DEPS, MISC) is kept verbatim, so writing a sentence
back reproduces the input byte for byte, with only HEAD and DEPREL replaced when predictions are
given (and UPOS, XPOS or FEATS when a tagger's tags are written); the CoNLL 2018 evaluator can
then align a prediction file with its gold file.

Fields are interpreted with the ``conllu`` package (``parse_id_value``, ``parse_int_value``,
``parse_comment_line``). Lines are split here, on tabs only, because ``conllu``'s own line
splitter strips whitespace and also splits on double spaces, which would hide column errors and
break the byte-exact round trip.

Each problem is reported as ``FILE:LINE: reason`` (lines count from 1).

A field never holds a control character (C0 or C1, tab and line break included, or a Unicode
line or paragraph separator): the reader reports one, and the writer refuses a predicted
relation label holding one, so no label can inject lines or columns into a written file.
The path ``-`` reads standard input and writes standard output (:data:`STANDARD_STREAM`).
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from conllu.exceptions import ParseException
from conllu.parser import parse_comment_line, parse_id_value, parse_int_value

from ..rundir import write_atomic

log = logging.getLogger(__name__)

COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
HEAD_COLUMN = 6
DEPREL_COLUMN = 7
# The tag columns a tagger may write (Sentence field -> column index).
TAG_FIELDS = {"upos": 3, "xpos": 4, "feats": 5}
MAX_LISTED = 20  # problems listed in an error message; the total is always given
STANDARD_STREAM = "-"  # as a path: standard input to read, standard output to write
STANDARD_INPUT_NAME = "<stdin>"  # standard input in messages
# What no field may hold: C0 and C1 controls (the column tab, the line feed and the carriage
# return included) and the Unicode line and paragraph separators, which line splitters other
# than this reader's break lines at.
CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# The same in UTF-8 bytes, the tab and the line feed left out: a file without any (nearly every
# file) skips the check of each line.
_CONTROL_BYTES = re.compile(b"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]")

OnMalformed = Literal["error", "skip"]


class DataError(ValueError):
    """A data file or data setting is unusable; the message is meant for the user as is.

    Attributes:
        problems: the ``Problem`` objects behind the error (empty when it is not about lines).
    """

    def __init__(self, message: str, problems: Sequence[Problem] = ()):
        super().__init__(message)
        self.problems = list(problems)


@dataclass(frozen=True)
class Problem:
    """One problem in a CoNLL-U file; ``str(problem)`` is ``FILE:LINE: reason``."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class Sentence:
    """One sentence block of a CoNLL-U file.

    Word-level lists have length ``n`` (word ``i`` is at index ``i - 1``); ``heads`` are 1-based
    word indices with ``0`` for ROOT, as in the file (``-1`` each, and relations ``_``, when
    read as unparsed text: ``trees=False``).

    Attributes:
        lines: the block's raw lines without newlines (comments, MWT and empty-node lines
            included), as read.
        line: file line number of ``lines[0]``.
        word_lines: for each word, its index in ``lines``.
        sent_id: the ``# sent_id`` value, if any.
        sent_id_index: index in ``lines`` of the comment giving ``sent_id``.
        problems: what is wrong with the sentence; empty for a valid sentence.
    """

    lines: list[str]
    line: int
    word_lines: list[int] = field(default_factory=list)
    forms: list[str] = field(default_factory=list)
    lemmas: list[str] = field(default_factory=list)
    upos: list[str] = field(default_factory=list)
    xpos: list[str] = field(default_factory=list)
    feats: list[str] = field(default_factory=list)
    heads: list[int] = field(default_factory=list)
    rels: list[str] = field(default_factory=list)
    sent_id: str | None = None
    sent_id_index: int = 0
    problems: list[Problem] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.forms)


def is_standard_stream(path: str | os.PathLike) -> bool:
    """Whether ``path`` is ``-``: standard input to read, standard output to write."""
    return os.fspath(path) == STANDARD_STREAM


def source_name(path: str | os.PathLike) -> str:
    """``path`` as messages name it: as given, or ``<stdin>`` for ``-``."""
    return STANDARD_INPUT_NAME if is_standard_stream(path) else os.fspath(path)


def control_character(value: str) -> str | None:
    """The first control character in ``value`` as ``U+XXXX`` (:data:`CONTROL_CHARACTER`), or
    ``None``."""
    found = CONTROL_CHARACTER.search(value)
    return None if found is None else f"U+{ord(found.group()):04X}"


def _decode(path: str, data: bytes) -> tuple[list[str], list[Problem]]:
    """Lines of ``data`` decoded as UTF-8; undecodable lines are reported and kept replaced."""
    try:
        return data.decode("utf-8").split("\n"), []
    except UnicodeDecodeError:
        lines, problems = [], []
        for number, raw in enumerate(data.split(b"\n"), 1):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                byte = raw[e.start]
                problems.append(
                    Problem(
                        path, number, f"invalid UTF-8 (byte 0x{byte:02x} at column {e.start + 1})"
                    )
                )
                lines.append(raw.decode("utf-8", errors="replace"))
        return lines, problems


def _find_cycles(heads: Sequence[int]) -> list[list[int]]:
    """Cycles of a head function over words ``1..n`` (``heads[d - 1]`` in ``0..n``, no loops).

    Iterative walk with per-start stamps: O(n).

    Returns:
        Each cycle as its words, starting from the smallest, in dependent -> head order.
    """
    n = len(heads)
    stamp = [0] * (n + 1)  # 0: unvisited; otherwise the start word of the walk that saw it
    cycles = []
    for start in range(1, n + 1):
        d = start
        while d != 0 and stamp[d] == 0:
            stamp[d] = start
            d = heads[d - 1]
        if d != 0 and stamp[d] == start:  # the walk closed on itself
            cycle = [d]
            h = heads[d - 1]
            while h != d:
                cycle.append(h)
                h = heads[h - 1]
            first = cycle.index(min(cycle))
            cycles.append(cycle[first:] + cycle[:first])
    return cycles


def _check_tree(path: str, sentence: Sentence, single_root: bool) -> None:
    """Append the tree problems of a sentence whose lines all parsed."""
    heads = sentence.heads
    n = len(heads)

    def line_of(word: int) -> int:
        return sentence.line + sentence.word_lines[word - 1]

    problems = sentence.problems
    for d, h in enumerate(heads, 1):
        if not 0 <= h <= n:
            problems.append(Problem(path, line_of(d), f"HEAD {h} out of range 0..{n}"))
        elif h == d:
            problems.append(Problem(path, line_of(d), f"word {d} is its own head"))
    if problems:
        return
    roots = [d for d, h in enumerate(heads, 1) if h == 0]
    if not roots:  # then every word has a word head, so there is a cycle too: one message
        problems.append(Problem(path, line_of(1), "no word attaches to ROOT (HEAD 0)"))
        return
    for cycle in _find_cycles(heads):
        chain = " -> ".join(map(str, [*cycle, cycle[0]]))
        problems.append(Problem(path, line_of(cycle[0]), f"cycle {chain} (word -> head)"))
    if single_root and len(roots) > 1:
        listed = ", ".join(map(str, roots))
        problems.append(
            Problem(
                path,
                line_of(roots[1]),
                f"{len(roots)} words attach to ROOT (words {listed}); expected exactly one",
            )
        )


def _parse_sentence(
    path: str, lines: list[str], start: int, trees: bool, controls: bool = True
) -> Sentence:
    """Parse one block; line problems go to ``sentence.problems`` (tree checks come later).

    Without ``trees``, HEAD and DEPREL are not read: heads are ``-1`` and relations ``_``.
    ``controls``: the file may hold a control character (else the lines are not searched).
    """
    sentence = Sentence(lines=lines, line=start)
    problems = sentence.problems
    for k, line in enumerate(lines):
        number = start + k
        if line.endswith("\r"):
            problems.append(Problem(path, number, "carriage return: lines must end with LF only"))
            continue
        if line.startswith("#"):
            for key, value in parse_comment_line(line):
                if key == "sent_id":
                    sentence.sent_id, sentence.sent_id_index = value, k
            continue
        cols = line.split("\t")
        if len(cols) != len(COLUMNS):
            problems.append(
                Problem(
                    path,
                    number,
                    f"wrong number of columns: {len(cols)} (expected 10, tab-separated)",
                )
            )
            continue
        if "" in cols:
            name = COLUMNS[cols.index("")]
            problems.append(Problem(path, number, f"empty {name} column (use _ for no value)"))
            continue
        if controls and CONTROL_CHARACTER.search(line.replace("\t", " ")):
            name, char = next((c, u) for c, v in zip(COLUMNS, cols, strict=True)
                              if (u := control_character(v)))  # fmt: skip
            problems.append(Problem(path, number, f"control character {char} in {name}"))
            continue
        try:
            word_id = parse_id_value(cols[0])
        except ParseException:
            word_id = None
        if word_id is None:
            problems.append(
                Problem(
                    path,
                    number,
                    f"ID {cols[0]!r} is not an integer, a range like 3-4 or an empty node like 5.1",
                )
            )
            continue
        if not isinstance(word_id, int):  # a multiword token or an empty node: kept, not parsed
            continue
        expected = len(sentence.forms) + 1
        if word_id != expected and not problems:  # after a skipped line, IDs cannot match
            problems.append(
                Problem(path, number, f"word ID {word_id} out of order: expected {expected}")
            )
        head = -1
        if trees:
            try:
                head = parse_int_value(cols[HEAD_COLUMN])
            except ParseException:
                head = None
            if head is None:
                problems.append(
                    Problem(path, number, f"HEAD {cols[HEAD_COLUMN]!r} is not an integer")
                )
                continue
        sentence.word_lines.append(k)
        sentence.forms.append(cols[1])
        sentence.lemmas.append(cols[2])
        sentence.upos.append(cols[3])
        sentence.xpos.append(cols[4])
        sentence.feats.append(cols[5])
        sentence.heads.append(head)
        sentence.rels.append(cols[DEPREL_COLUMN] if trees else "_")
    return sentence


def parse_conllu(
    path: str | os.PathLike, *, single_root: bool, trees: bool = True
) -> tuple[list[Sentence], list[Problem]]:
    """Read and validate a CoNLL-U file, without any malformed-data policy.

    Checks: UTF-8 without BOM; LF line ends; 10 tab-separated, non-empty columns; integer (or
    MWT/empty-node) IDs numbered ``1..n`` in order; integer HEAD in ``0..n``; no self-loop; no
    cycle; at least one word on ROOT, exactly one when ``single_root``; no empty sentence; a blank
    line after every sentence and no extra one; unique ``sent_id``. O(file size).

    Args:
        path: the file; messages name it as given (:func:`source_name`). A name ending in
            ``.gz`` is read through gzip (the compressed predictions committed with published
            runs); ``-`` reads standard input.
        single_root: require exactly one word attached to ROOT.
        trees: read HEAD and DEPREL and check the trees (training and gold data); ``False``
            for text to be parsed: HEAD and DEPREL may be ``_`` or filled, and are ignored
            (each word's head is ``-1`` and its relation ``_``); every other check applies.

    Returns:
        ``(sentences, file_problems)``: every sentence block in file order (an invalid one has
        non-empty ``problems``), and the problems that belong to no sentence (blank lines).

    Raises:
        DataError: the file cannot be read.
    """
    name = source_name(path)
    try:
        data = sys.stdin.buffer.read() if is_standard_stream(path) else Path(path).read_bytes()
        if name.endswith(".gz"):
            data = gzip.decompress(data)
    except OSError as e:  # gzip.BadGzipFile included
        raise DataError(f"{name}: cannot read file ({e.strerror or e})") from None
    lines, decode_problems = _decode(name, data)
    controls = _CONTROL_BYTES.search(data) is not None
    if lines[-1] == "":  # the text after the final newline
        lines.pop()
    file_problems: list[Problem] = []
    if lines and lines[0].startswith("\ufeff"):  # editors on Windows add one
        file_problems.append(Problem(name, 1, "byte order mark: CoNLL-U is UTF-8 without BOM"))
        lines[0] = lines[0][1:]
    sentences: list[Sentence] = []
    start = None
    for number, line in enumerate(lines, 1):
        if line:
            if start is None:
                start = number
        elif start is None:
            file_problems.append(Problem(name, number, "empty sentence: extra blank line"))
        else:
            block = lines[start - 1 : number - 1]
            sentences.append(_parse_sentence(name, block, start, trees, controls))
            start = None
    if start is not None:
        sentences.append(_parse_sentence(name, lines[start - 1 :], start, trees, controls))
        file_problems.append(
            Problem(name, len(lines), "missing blank line after the last sentence")
        )
    if not lines:
        file_problems.append(Problem(name, 1, "empty file: no sentences"))

    by_line = {p.line: p for p in decode_problems}
    first_seen: dict[str, int] = {}
    for sentence in sentences:
        end = sentence.line + len(sentence.lines)
        sentence.problems[:0] = [by_line[i] for i in range(sentence.line, end) if i in by_line]
        if not sentence.problems and not sentence.forms:
            sentence.problems.append(Problem(name, sentence.line, "empty sentence: no word lines"))
        if not sentence.problems and trees:
            _check_tree(name, sentence, single_root)
        if sentence.sent_id is not None:
            line = sentence.line + sentence.sent_id_index
            if sentence.sent_id in first_seen:
                first = first_seen[sentence.sent_id]
                reason = f"duplicate sent_id {sentence.sent_id!r} (first at line {first})"
                sentence.problems.append(Problem(name, line, reason))
            else:
                first_seen[sentence.sent_id] = line
        sentence.problems.sort(key=lambda p: p.line)
    return sentences, file_problems


def check_conllu(path: str | os.PathLike, *, single_root: bool) -> list[Problem]:
    """Every problem of a CoNLL-U file, sorted by line (empty for a valid file).

    Raises:
        DataError: the file cannot be read.
    """
    sentences, problems = parse_conllu(path, single_root=single_root)
    problems = problems + [p for s in sentences for p in s.problems]
    return sorted(problems, key=lambda p: p.line)


def _word_line_count(sentence: Sentence) -> int:
    """Lines of a (possibly malformed) sentence that look like words: not comments, MWT, empty."""
    return sum(
        1
        for line in sentence.lines
        if not line.startswith("#") and not {"-", "."} & set(line.split("\t", 1)[0])
    )


def read_conllu(
    path: str | os.PathLike,
    *,
    single_root: bool,
    on_malformed: OnMalformed,
    trees: bool = True,
    skip_option: str | None = "data.on_malformed=skip",
) -> list[Sentence]:
    """Read a CoNLL-U file for parsing, applying the malformed-data policy.

    Args:
        path: the file.
        single_root: require exactly one word attached to ROOT.
        on_malformed: ``"error"`` raises on any problem, listing the first ones; ``"skip"`` logs
            each problem (WARNING on ``bockparse.data.conllu``) and drops the sentences that
            have one, then logs the total of sentences and words dropped.
        trees: as :func:`parse_conllu` (``False``: unparsed text, HEAD and DEPREL ignored).
        skip_option: the caller's setting that drops bad sentences, suggested in the error;
            ``None`` where the caller has none (the error then only says to fix the file).

    Returns:
        The valid sentences, in file order.

    Raises:
        DataError: the file cannot be read, it has a problem under ``"error"``, or no valid
            sentence is left.
    """
    if on_malformed not in ("error", "skip"):
        raise DataError(f"on_malformed must be 'error' or 'skip', got {on_malformed!r}")
    name = source_name(path)
    sentences, file_problems = parse_conllu(path, single_root=single_root, trees=trees)
    bad = [s for s in sentences if s.problems]
    if on_malformed == "error":
        problems = sorted(
            file_problems + [p for s in bad for p in s.problems], key=lambda p: p.line
        )
        if problems:
            shown = "\n".join(map(str, problems[:MAX_LISTED]))
            more = (
                f"\n... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
            )
            advice = "fix the file"
            if skip_option is not None:
                advice += f", or set {skip_option} to drop the sentences that have one"
            raise DataError(f"{name}: {len(problems)} problem(s) ({advice}):\n{shown}{more}",
                            problems)  # fmt: skip
    else:
        for problem in file_problems:
            log.warning("%s", problem)
        for sentence in bad:
            for problem in sentence.problems:
                log.warning("%s (sentence at line %d dropped)", problem, sentence.line)
        if bad:
            words = sum(_word_line_count(s) for s in bad)
            log.warning(
                "%s: dropped %d of %d sentences (%d words) with problems (on_malformed: skip)",
                name,
                len(bad),
                len(sentences),
                words,
            )
    kept = [s for s in sentences if not s.problems]
    if not kept:
        raise DataError(f"{name}: no valid sentence")
    return kept


def _label(label: str, what: str = "relation label") -> str:
    """``label`` if it can be a DEPREL (or tag) field (:func:`format_sentence`)."""
    if not label or (char := control_character(label)):
        problem = "is empty" if not label else f"holds the control character {char}"
        raise DataError(f"{what} {label!r} {problem}: not written into CoNLL-U")
    return label


def format_sentence(
    sentence: Sentence,
    heads: Sequence[int] | None = None,
    rels: Sequence[str] | None = None,
    tags: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The sentence as CoNLL-U text, blank line included, with HEAD and DEPREL (and tag
    columns) replaced if given.

    Args:
        sentence: a sentence from ``read_conllu``.
        heads: ``n`` heads, 1-based with ``0`` for ROOT, or ``None`` to keep the file's.
        rels: ``n`` relation labels, or ``None`` to keep the file's.
        tags: field (``upos``, ``xpos``, ``feats``: :data:`TAG_FIELDS`) -> ``n`` tags to write
            into that column (a tagger's); the columns not given are kept.

    Raises:
        ValueError: ``heads``, ``rels`` or a tag column of the wrong length, or an unknown tag
            field.
        DataError: a relation label or tag that is empty or holds a control character (a tab
            or a line break would inject columns or lines): never written.
    """
    n = len(sentence)
    tags = dict(tags or {})
    unknown = set(tags) - set(TAG_FIELDS)
    if unknown:
        raise ValueError(f"unknown tag fields {sorted(unknown)} (known: {list(TAG_FIELDS)})")
    for name, values in (("heads", heads), ("rels", rels), *tags.items()):
        if values is not None and len(values) != n:
            raise ValueError(
                f"{name}: expected {n} values for the sentence at line {sentence.line}, "
                f"got {len(values)}"
            )
    lines = list(sentence.lines)
    if heads is not None or rels is not None or tags:
        for i, k in enumerate(sentence.word_lines):
            cols = lines[k].split("\t")
            if heads is not None:
                cols[HEAD_COLUMN] = str(int(heads[i]))
            if rels is not None:
                cols[DEPREL_COLUMN] = _label(rels[i])
            for field, values in tags.items():
                cols[TAG_FIELDS[field]] = _label(values[i], COLUMNS[TAG_FIELDS[field]])
            lines[k] = "\t".join(cols)
    return "\n".join(lines) + "\n\n"


def write_conllu(
    path: str | os.PathLike,
    sentences: Sequence[Sentence],
    heads: Sequence[Sequence[int]] | None = None,
    rels: Sequence[Sequence[str]] | None = None,
    tags: Sequence[Mapping[str, Sequence[str]]] | None = None,
) -> None:
    """Write sentences as CoNLL-U, atomically; see ``format_sentence`` for ``heads``, ``rels``
    and ``tags``.

    Args:
        path: the output file (replaced as a whole, never left half-written), or ``-`` for
            standard output.
        sentences: the sentences, in output order.
        heads: per sentence, ``n`` heads (1-based, ``0`` for ROOT), or ``None``.
        rels: per sentence, ``n`` labels, or ``None``.
        tags: per sentence, tag field -> ``n`` tags to write, or ``None``.
    """
    for name, values in (("heads", heads), ("rels", rels), ("tags", tags)):
        if values is not None and len(values) != len(sentences):
            raise ValueError(f"{name}: expected {len(sentences)} sentences, got {len(values)}")

    def pick(values: Sequence | None, i: int):
        return None if values is None else values[i]

    text = "".join(
        format_sentence(s, pick(heads, i), pick(rels, i), pick(tags, i))
        for i, s in enumerate(sentences)
    )
    if is_standard_stream(path):
        sys.stdout.flush()  # what was printed before comes first
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
    else:
        write_atomic(path, text)
