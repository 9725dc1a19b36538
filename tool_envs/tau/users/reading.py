"""What an agent's message asks of the customer, read from its words rather than its punctuation.

A simulated user has to know what the agent wants before it can answer fairly, and so does the
check that blames a user for a fault (:mod:`tool_envs.tau.users.faults`). Both read a message
here, the same way. A message is split into sentences; each sentence is a *request* when it asks
something of the user however it is worded:

- a question (``?``);
- a need stated by the agent ("I need your email", "your zip code is required", "I'll need");
- an imperative ("Tell me your zip code", "Provide the order number", "Let me know ...");
- a polite form ("please share ...", "if you could ...", "can I get ...", "you can give me ...");
- a fragment that only names details ("Your name and zip code.", "Email address and zip code.").

A pleasantry, an apology or a report before or after the request changes nothing. The fields a
request names (by a field's name or one of its keywords; "which one" by the field named in the
sentences before it) are what it asks for, except where it states their value ("your user id
mia_li_3668") or names someone else's ("each passenger's name"). A sentence that asks the user
to approve an action ("Shall I proceed?", "Would you like me to cancel it?", "Do you confirm?")
is a *confirmation*; the details it spells out are the action's, not questions. The rest of the
message decides whether the agent is done: a report of an outcome, a goodbye, a refusal or a
transfer *ends* the chat; anything else (an open question, "let me check that") does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tool_envs.tau.task import UserScenario

__all__ = [
    "DEFAULT_KEYWORDS",
    "IDENTITY_FIELDS",
    "FieldWords",
    "Reading",
    "Vocabulary",
    "field_words",
    "read_message",
    "requests_to_act",
    "sentences",
    "vocabulary",
]


@dataclass(frozen=True)
class Reading:
    """What one agent message asks for, and whether it closes the conversation.

    Attributes:
        asked: Fields the message asks for, in the order of the vocabulary (known fields first).
        identity: The message asks the user to identify themselves without naming a detail
            ("I need to verify your identity first").
        confirmation: The message asks the user to approve an action (yes or no).
        anything_else: The message asks whether the user needs anything else.
        ends: The message reports an outcome, says goodbye, says it cannot help or hands the
            user over, and asks nothing.
        request: Some sentence asks something of the user (a question or a request), whatever
            it is about.
    """

    asked: tuple[str, ...] = ()
    identity: bool = False
    confirmation: bool = False
    anything_else: bool = False
    ends: bool = False
    request: bool = False


@dataclass(frozen=True)
class FieldWords:
    """How a field is asked for: ``pattern`` finds its words (group 1: the words found), and
    ``nouns`` the thing it names ("appointment" for "which appointment"), so that "Which one?"
    after a sentence about appointments asks for it."""

    field: str
    pattern: re.Pattern[str]
    nouns: re.Pattern[str] | None
    labels: re.Pattern[str] | None = None
    """Weaker words, used only where no field's own words are found in a sentence: the labels
    inside a known value ("Filling: ..." in "1 Banh Mi (Filling: Grilled pork)")."""


Vocabulary = Sequence[FieldWords]
"""The fields a user can be asked for, those it knows first."""

_WH_WORDS = ("which", "what", "who", "how")
# Words that change what a wh-phrase asks for: "which new item" is not "which item".
_NOT_BETWEEN = r"(?:new|other|another|different|replacement|second|extra|additional|your|my)\b"


def field_words(field: str, words: Iterable[str], labels: Iterable[str] = ()) -> FieldWords:
    """The :class:`FieldWords` of ``field`` asked by any of ``words``.

    Words are found at a word start, longest first; a word that ends in a symbol ("order #")
    must not run into a value ("order #W123" states the id). "which item" also finds "which
    exact item": one word may stand between a wh-word and the rest. The match itself is empty,
    so overlapping words are all found ("how many extra" and "extra bag").
    """
    pattern = _words_pattern(words)
    labels = set(labels) - set(words)
    nouns = set()
    for word in words:
        head, _, rest = word.partition(" ")
        if head.lower() in ("which", "what") and rest.isalpha():  # "which visit", not "what the"
            nouns.add(rest.lower())
    nouns -= {"one", "ones", "option", "options", "day", "time", "date", "change", "happened"}
    noun_pattern = None
    if nouns:
        plural = "|".join(re.escape(n) for n in sorted(nouns, key=len, reverse=True))
        noun_pattern = re.compile(rf"\b(?:{plural})s?\b", re.I)
    return FieldWords(field, pattern, noun_pattern, _words_pattern(labels) if labels else None)


def _words_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """Words found at a word start (group 1); a word written ``"x?"`` is found only in a
    question (a value offered as a choice: "Was it ordered by mistake, or ...?")."""
    words = sorted(set(words), key=len, reverse=True)
    alternatives = []
    for word in words:
        if word.endswith("?"):
            alternatives.append(rf"{re.escape(word[:-1])}(?=\s*,?\s+or\b[^.!]*\?)")
            continue
        escaped = re.escape(word)
        head, _, rest = word.partition(" ")
        if head.lower() in _WH_WORDS and rest:
            escaped = rf"{head}\s+(?:(?!{_NOT_BETWEEN})[\w'\u2019-]+\s+)?{re.escape(rest)}"
        elif head.lower().endswith("'s") and rest and " " not in rest:  # "child's [full] name"
            escaped = rf"{re.escape(head)}\s+(?:[\w-]+\s+)?{re.escape(rest)}"
        # a word ends where the text's word does ("name", "names", "who is travel[ling]", not
        # "named"); one ending in a symbol must not run into a value ("order #", not "#W123")
        escaped += r"(?:s|es|ing|ling|l?ers?)?(?!\w)" if word[-1].isalnum() else r"(?!\w)"
        alternatives.append(escaped)
    return re.compile(rf"\b(?=({'|'.join(alternatives)}))", re.I)


# The labels inside a known value ("1 Banh Mi (Filling: Grilled pork; Spice level: Mild)"): an
# agent asks for the value by them ("Which filling and spice level would you like?").
_VALUE_LABEL = re.compile(r"(?<![\w'])([A-Za-z][A-Za-z ]{2,24}?)\s*:")

# Fields whose plain name rarely appears in how agents ask for them.
DEFAULT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "email": ("email", "e-mail", "email address", "e-mail address"),
    "zip_code": ("zip", "postal code", "postcode", "post code", "pincode", "pin code"),
    "name": ("your name", "full name", "first name", "last name", "name and", "good name",
             "who's the account holder", "who is the account holder", "whose name",
             "who am i speaking"),
    "user_id": ("user id", "user_id", "account id", "customer id"),
    "order_id": ("order id", "order number", "order_id", "which order", "order #", "order you",
                 "number of the order", "number of your order", "number of order"),
    "reservation_id": ("reservation id", "reservation number", "confirmation number",
                       "booking reference", "reservation_id", "which reservation",
                       "which booking", "reservation you", "booking you", "reservation code",
                       "booking code", "confirmation code"),
    "payment_method": ("payment method", "pay with", "payment", "refund to", "like to pay",
                       "refunded to", "pay the difference", "which card", "refund on",
                       "original card"),
}  # fmt: skip
IDENTITY_FIELDS = frozenset(
    {
        "email", "name", "zip_code", "user_id", "phone", "phone_number", "date_of_birth",
        "member_id", "patient_name", "patient_date_of_birth", "patient_member_id",
    }
)  # fmt: skip
"""Fields a policy identifies a customer by. Asked for one it does not know, the user offers
the ones it knows: every policy accepts another identity (retail: name and zip code instead of
an email; telecom: name or date of birth; healthcare: member id, name or email with the date of
birth)."""


def vocabulary(
    scenario: UserScenario, keywords: Mapping[str, Iterable[str]] | None = None
) -> list[FieldWords]:
    """(field, pattern of its words) for every field a user of ``scenario`` can be asked for:
    its known fields first (they claim words shared with others), then the fields it does not
    know (the defaults', the domain's ``keywords`` and the scenario's own)."""
    keywords = keywords or {}
    fields = [*DEFAULT_KEYWORDS, *keywords, *scenario.keywords]
    fields += [f for f in scenario.known_info if f not in fields]
    patterns = {}
    for field in dict.fromkeys(fields):
        words = {field.replace("_", " "), field}
        value = scenario.known_info.get(field, "")
        labels = _VALUE_LABEL.findall(value)
        if 2 <= len(value.split()) <= 5 and not any(ch.isdigit() for ch in value):
            labels.append(value.rstrip(".").lower() + "?")  # "Was it ordered by mistake, ...?"
        words.update(DEFAULT_KEYWORDS.get(field, ()))
        words.update(keywords.get(field, ()))
        words.update(scenario.keywords.get(field, ()))
        patterns[field] = field_words(field, words, labels)
    known = [patterns[field] for field in scenario.known_info]
    return known + [p for f, p in patterns.items() if f not in scenario.known_info]


# -- sentences -------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)"
    r"(?<!\bvs\.)(?<!\bSt\.)(?<=[.!?])[\"')\]]*\s+|\n+"
    # an emoji ends a sentence where a new one starts after it ("Done \u2705 Anything else?"),
    # not inside one ("your gift card \U0001F381 or your card?")
    r"|\s*[\u2705\u2714\U0001F300-\U0001FAFF]+\s*(?=[^\w\s]*[A-Z0-9]|\s*$)"
)
_BULLET = re.compile(r"^\s*(?:[-*\u2022\u2610\u2460-\u2473]|\d+[.)]|\(?[a-h][.)]|\[\s?\])\s*(?=\S)")
# A ticked item of a checklist is done, not asked: "[x] Email verified".
_TICKED = re.compile(r"^\s*(?:\[[xX\u2713\u2714]\]|[\u2611\u2705\u2714])")


_MARKDOWN = re.compile(r"\*\*|__|(?<!\w)[*_`](?=\w)|(?<=\w)[*_`](?!\w)|^\s*#+\s*", re.M)


# Spellings of quick chat ("whats your email", "can u"), read as the words they stand for.
_CASUAL_WORDS = {
    "whats": "what's", "wats": "what's", "u": "you", "ur": "your", "pls": "please",
    "plz": "please", "thx": "thanks", "appt": "appointment", "appts": "appointments",
    "acct": "account", "cant": "can't", "wont": "won't", "dont": "don't", "couldnt": "couldn't",
    "didnt": "didn't", "isnt": "isn't", "wich": "which", "wat": "what", "adress": "address",
    "acount": "account", "verifcation": "verification", "childs": "child's",
    "recieve": "receive", "reciept": "receipt", "r": "are", "res": "reservation",
    "resv": "reservation",
}  # fmt: skip
_CASUAL = re.compile(r"\b(?:" + "|".join(_CASUAL_WORDS) + r")\b", re.I)


_Y_FOR_WHY = re.compile(r"\by(?=\s+(?:do|did|are|is|would|should|was)\b)", re.I)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, markdown emphasis and headings removed; list items join the
    sentence that introduces them ("Please provide: - your email - your zip code")."""
    parts: list[str] = []
    listing = False  # inside a list a sentence introduced with ':'
    text = _CASUAL.sub(lambda m: _CASUAL_WORDS[m.group(0).lower()], _MARKDOWN.sub("", text))
    text = _Y_FOR_WHY.sub("why", text)
    for line in text.replace("(s)", "s").splitlines():
        if not line.strip() or _TICKED.match(line):
            continue
        if _BULLET.match(line) and listing:
            parts[-1] += " " + _BULLET.sub("", line).rstrip(".") + ";"
            continue
        parts += [piece for piece in _SENTENCE_END.split(line) if piece.strip()]
        listing = bool(parts) and parts[-1].rstrip().endswith(":")
    return [part.strip() for part in parts if part.strip()]


# -- cues ------------------------------------------------------------------------------------------

_INFO_VERBS = (
    r"provide|share|tell|give|send|state|enter|supply|specify|spell|type|list|confirm|verify|"
    r"mention|include|repeat|clarify|indicate|choose|pick|select|describe|write|read|say|text|"
    r"upload|attach|let (?:me|us) (?:know|have|get|see)|fill in|drop|note down|double-check|"
    r"recheck|shoot|hit me with|pass along|send over|identify|re-?type|re-?enter|resend|dm|"
    r"pop over|revert with|send across"
)
_LEAD_IN = (
    r"(?:(?:ok(?:ay)?|great|sure|alright|all right|perfect|thanks|thank you|got it|certainly|"
    r"first things first|one more thing|next step|pls|plz|"
    r"first(?:ly)?|next|then|now|also|and|so|just|kindly|please|lastly|finally|to start|"
    r"to begin|to continue|to proceed|before (?:we|i) (?:continue|proceed|start)|"
    r"go ahead and|quickly|once more|again|real quick)\b[\s,:!-]*)*"
)
_LABEL = r"(?:[\w ]{1,24}:\s+)?"  # "First step: restart your phone."
_IMPERATIVE = re.compile(rf"^\W*{_LABEL}{_LEAD_IN}(?:{_INFO_VERBS})\b(?!\s*:)", re.I)
_REQUEST_CUES = re.compile(
    r"\?"
    # a need the agent states: "I need", "I'll also need", "we require"
    r"|\b(?:i|we)(?:'ll|'d|\s+will|\s+would|\s+also|\s+still|\s+just|\s+first|\s+now|\s+only"
    r"|\s+do|\s+really|\s+will\s+also|\s+would\s+also)*\s+(?:need|require)\b"
    r"|^\W*need\b|\b(?:is|are|will be|'s)\s+(?:also\s+)?(?:needed|required|necessary|missing)\b"
    r"|(?:^\W*|\b(?:i|we)(?:'m|\s+am|\s+are)?\s+)(?:gonna|going\s+to|will|'ll)\s+(?:also\s+|just"
    r"\s+|still\s+)?need\b"
    r"|\b(?:need|want|like)\s+you\s+to\b|\bif\s+you\s+(?:could|can|would)\b"
    rf"|\byou(?:'ll|\s+will)?\s+need\s+to\s+(?:\w+\s+)?(?:{_INFO_VERBS})\b"
    r"|\bthe\s+next\s+(?:thing|step)\b.*\b(?:is|to)\b"
    rf"|\byou\s+(?:can|could|may|might)\s+(?:\w+\s+)?(?:{_INFO_VERBS})\b"
    r"|\b(?:could|can|would|will|may|might)\s+(?:you|u|i|we)\b|\b(?:pls|plz)\W*$"
    r"|\b(?:i|we)(?:'d|\s+would)\s+(?:like|love)\s+(?:to\s+(?:have|get|know|ask|confirm|verify"
    r"|see|collect|take|check|note|grab)|your|the)\b"
    r"|\b(?:would|will)\s+(?:help|be\s+(?:great|helpful|appreciated|useful))\b|\bappreciate\b"
    r"|\bwhat(?:'s|\s+is|\s+are|\s+was)\s+(?:your|the)\b|\bhow\s+(?:many|much)\b"
    r"|^\W*(?:\w+[,!]\s+)*(?:which|what)\b|\b(?:know|tell\s+me|specify|indicate|confirm|choose"
    r"|select|decide|identify|clarify)\s+(?:which|what)\b"
    rf"|\b(?:please|pls|kindly)\b,?\s+(?:(?:just|also|quickly|now|first)\s+)?(?:{_INFO_VERBS}"
    r"|your|the)\b|,?\s*\bplease\W*$|^\W*(?:your|the)\b[^.]*\bplease\b|,\s*please\s*,"
    r"|^\W*(?:your|the|just\s+the)\b[^.?]*\b(?:will\s+do|is\s+enough|works|is\s+fine|would\s+be"
    r"\s+(?:great|perfect|enough|helpful))\W*$"
    # "let me know when it's done"; "please turn off airplane mode" (not "please note ...")
    r"|\blet\s+(?:me|us)\s+know\b|^\W*(?:\w+[,!]?\s+){0,3}please\s+(?!note|allow|wait|hold|be\s+aware"
    r"|expect|keep|bear|stand|stay|remain|accept|feel|don't|do\s+not|contact|reach|visit|arrive"
    r"|bring|remember|review|note"
    r"|make\s+sure|have|enjoy|check\s+your\s+(?:email|inbox))\w+",
    re.I,
)
_CONFIRMATION = re.compile(
    r"\b(?:shall|should)\s+(?:i|we)\b"
    r"|\b(?:do|would)\s+you\s+(?:want|like)\s+(?:me|us)\s+to\b|\bwant\s+me\s+to\b"
    r"|\bready\s+for\s+(?:me|us)\s+to\b"
    r"|\b(?:can|may|could)\s+(?:i|we)\s+(?:go\s+ahead|proceed|continue|move\s+forward|now\s+\w+"
    r"|cancel|process|submit|make|book|place|apply|change|update|modify|file|schedule|reschedule"
    r"|transfer|refund|return|exchange|issue|add|remove|send|finali[sz]e|complete|switch|order"
    r"|upgrade|downgrade|enable|disable|suspend|resume|pay|charge|request|set)\b"
    r"|\b(?:do|would)\s+you\s+(?:approve|agree|authori[sz]e|accept|confirm)\b|\bare\s+you\s+sure\b"
    r"|\b(?:(?:do|would)\s+)?you\s+(?:want|wish|like)\s+that\s+(?:i|we)\b"
    r"|(?:^|[.,;]\s*)\W*(?:so\s+|then\s+|now\s+)?(?:i|we)\s+(?:now\s+)?(?:proceed|go\s+ahead"
    r"|do\s+(?:it|this|that)|continue|cancel|book|change|send|process|submit|make|transfer"
    r"|refund|apply|place|file|reschedule|move|update|add|remove)\b[^.!?]*\?"
    r"|\b(?:do|would)\s+you\s+(?:want|wish|like)\s+to\s+be\s+(?:transferred|connected|refunded"
    r"|rebooked|moved|put\s+through)\b"
    r"|^\W*confirm\s+(?:to\s+)?(?:update|change|cancel|book|add|remove|return|exchange|refund"
    r"|upgrade|transfer|modify|submit|file|process|place|buy|purchase)\b"
    r"|\b(?:would|do)\s+you\s+(?:like|want)\s+(?:that|this|it)\s*\?"
    r"|\b(?:ok(?:ay)?|alright|all\s+right|fine|good)\s+(?:for\s+(?:me|us)\s+to|to|if\s+(?:i|we))\b[^.!]*\?"
    r"|^\W*(?:\w+[,.]?\s+){0,2}(?:ok(?:ay)?|good|fine|alright)\s+to\s+(?:go\s+ahead|proceed|book"
    r"|cancel|continue|submit|do\s+it|confirm)\W*$"
    r"|\b(?:do|would)\s+you\s+(?:still\s+)?(?:want|like|wish)\s+(?:to\s+)?(?:proceed|go\s+ahead"
    r"|continue|cancel|confirm|book|make|change|return|exchange|file|submit|upgrade|add|move"
    r"|switch|buy|purchase|pay|complete|place|do\s+that|do\s+this|keep)\b"
    r"|\byour\s+(?:approval|consent|go-ahead|permission|confirmation|authori[sz]ation)\b"
    r"(?!\s+(?:number|code|id))|\byou\s+agree\b[^.!]*\?"
    r"|^\W*confirm\s+(?:the\s+)?(?:purchase|order|booking|cancellation|change|exchange|return"
    r"|refund|upgrade|transfer|payment|request|top-up|appointment)\s*\?"
    r"|\b(?:yes|y)\s*/\s*(?:no|n)\b|\byes\s+or\s+no\b|\breply\s+(?:with\s+)?[\"']?yes\b"
    r"|\bconfirm\s+(?:that|whether|if|you|this|the\s+(?:change|cancellation|booking|request"
    r"|above|details|action|following))\b|\bconfirm\s*\?|\bplease\s+confirm\W*$"
    r"|^\W*please\s+confirm\s*:|^\W*please\s+confirm\b[^?]*:\s*$"
    r"|\b(?:happy|ok|okay|alright|fine)\s+for\s+(?:me|us)\s+to\b|\byes\s*\?\s*$"
    r"|\b(?:go\s+ahead\s+and|still)\s+\w+(?:\s+(?:it|them|that|this))?\s*\?"
    r"|(?:^|[.,;]\s*|\b\$?\d[\w.]*\s+)(?:add|cancel|submit|book|change|upgrade|return|refund"
    r"|apply|transfer|switch|confirm|proceed|process|place|file|reschedule|move|buy|purchase"
    r"|do)\s+(?:it|them|that|this|with\s+(?:the\s+)?\w+)\s*\?"
    r"|^\W*(?:do\s+you\s+)?want\s+(?:me\s+to\s+)?(?:transfer|cancel|book|add|process|submit"
    r"|change|upgrade|refund|return)\b[^.!]*\?"
    r"|^\W*(?:please\s+)?confirm\W*$"
    r"|\blet\s+me\s+know\s+if\s+(?:i\s+(?:should|can|may)|you(?:'d|\s+would)?\s+(?:like|want)"
    r"|that(?:'s|\s+is)?\s+(?:ok|okay|fine|alright|works)|you\s+(?:approve|agree))\b",
    re.I,
)
# Approval words that make a confirmation only in a yes/no question ("Shall we proceed?" but
# not "I need your email to proceed."; "Does that work?" but not "What time works for you?").
_APPROVAL_WORDS = re.compile(
    r"\b(?:proceed|go\s+ahead|move\s+forward|continue|good\s+to\s+go|sounds?\s+good|work(?:s)?"
    r"\s+for\s+you|(?:ok|okay|fine|alright)\s+with\s+you|(?:is|does)\s+(?:that|this)\s+(?:correct"
    r"|right|ok|okay|fine|alright|work)|correct|right|ok|okay|alright|all\s+right)\s*\?",
    re.I,
)
_WH_QUESTION = re.compile(
    r"^(?:\W*(?:\w+[,!]\s+)?(?:(?:to|for|from|in|on|at|with|into)\s+)?|[^,?]*,\s*)"
    r"(?:what|which|when|where|who|whom|whose|why|how\s+(?:many"
    r"|much|would|do|should|can|may|about))\b",
    re.I,
)
_YES_NO_ONLY = re.compile(r"\b(?:y\s*/\s*n|yes\s*/\s*no|yes\s+or\s+no)\W*$", re.I)
# A choice put to the user ("Would you like to add insurance?", "Do you want the window seat?"):
# about a detail it names, an ask for that detail; about nothing named, a yes or no.
# A sentence that opens with the action itself offers it for approval ("Book sick visit with
# Dr. Whitcomb on 2025-03-20? (yes/no)"), whatever details it names.
_ACTION_FIRST = re.compile(
    r"^\W*(?:book|cancel|change|exchange|return|refund|upgrade|downgrade|move|reschedule|submit"
    r"|file|add|remove|purchase|buy|transfer|switch|process|place|apply|renew|refill)\b",
    re.I,
)
_OWN_CHOICE = re.compile(
    r"\b(?:do|would)\s+you\s+(?:still\s+|also\s+)?(?:want|like|wish|prefer)\b(?!\s+(?:me|us|that)\b)",
    re.I,
)
# Details of someone else's: a field the user does not know, named this way, is not asked of it.
_SOMEONE = (
    r"(?:passengers?|patients?|travell?ers?|child|children|kid|kids|kiddo|son|daughter|wife"
    r"|husband|partner|friend|guests?|mom|mother|dad|father|parent|baby|spouse|person|persons"
    r"|people|everyone|companion)"
)
_SOMEONE_ELSES_BEFORE = re.compile(
    rf"(?:\b(?i:{_SOMEONE})(?:'s|s'|\u2019s)|\b(?i:their|his|her)"
    # a name's possessive inside a sentence ("Could you give me Nkechi's member ID?")
    r"|(?<=[\w,]\s)(?!(?:What|That|It|Here|There|Let|He|She|Who|Where|How|Everything|Nothing"
    r"|Today|Yesterday)\b)[A-Z][a-z]+(?:'s|\u2019s))\s+(?:[\w-]+,?\s+){0,4}$"
)
# The change a message is about, not a detail asked: "for changing the delivery address, ...",
# "Switching payment is easy!"
_PURPOSE_BEFORE = re.compile(
    r"(?:\b(?:for|about|to\s+start|before)\s+|^\W*)(?:switching|changing|updating|modifying)"
    r"\s+(?:the\s+|your\s+|my\s+)?(?:\w+\s+)?$",
    re.I,
)
# A zip code asked as part of an address: "the full address with postcode".
_ADDRESS_WITH = re.compile(
    r"\baddress\s+(?:with|including|incl\.?|and|along\s+with)\s+(?:the\s+|your\s+)?$", re.I
)
_SOMEONE_ELSES_AFTER = re.compile(
    rf"^[\w\s-]{{0,40}}?\b(?:of|for)\s+(?:(?:each|every|all|the|any|other)\s+(?:\w+\s+)?"
    rf"{_SOMEONE}|everyone|everybody)\b",
    re.I,
)
# "the name and dosage of the medication" names a thing, not the user.
_OF_A_THING = re.compile(
    r"^(?:\s+and)?(?:\s+[\w-]+)?\s+of\s+(?:the|this|that|your)\s+(?:medication|medicine|prescription"
    r"|drug|doctor|pharmacy|store|restaurant|dish|item|product|plan|app|hotel|airline|clinic"
    r"|provider|practice|device|phone|network|card)\b",
    re.I,
)
_ADDRESS_PARTS = re.compile(
    r"\b(?:street|city|state|suite|apartment|apt|unit|address|country|town)\b", re.I
)
# A capitalised label on a screen: "Access Point Names" is not the user's name.
_UI_LABEL = re.compile(r"(?<=\w\s)[A-Z][a-z]+\s+(?:[A-Z][a-z]+\s+)?$")
_A_THINGS_NAME = re.compile(
    r"\b(?:item|product|dish|drug|medication|medicine|plan|app|store|restaurant|hotel|file"
    r"|network|wi-?fi|account|user|doctor's|doctor|pharmacy|clinic)\s+$",
    re.I,
)


def _title_case(sentence: str) -> bool:
    """Most words capitalised ("Please Provide Your Full Name"): no word is a screen label."""
    words = re.findall(r"[A-Za-z]+", sentence)
    return len(words) >= 3 and sum(w[0].isupper() for w in words) >= 0.6 * len(words)


# "no email", "without an email": the field the user lacks is not asked for.
_NEGATED = re.compile(
    r"\b(?:no|without|don't\s+have|do\s+not\s+have|instead\s+of)\s+(?:an?\s+|the\s+|your\s+)?$",
    re.I,
)
# A trailing clause of purpose or time: "I need your email before I can change the shipping
# address" does not ask for the address.
_TRAILING_CLAUSE = re.compile(
    r"\b(?:before|once|after|until|so\s+that|so\s+i\s+can|in\s+order\s+to"
    r"|where\s+(?:the|your|my))\b[^,;?.!:]*",
    re.I,
)
# A value right after a field's words states it ("under user ID mia_li_3668", "order #W123").
_STATED_VALUE = re.compile(
    r"^[\s:#]*(?:[\w.+-]+@[\w-]+\.\w|[\w#-]*\d)|^\s*:\s*(?!\s*$)[^?]*$", re.I
)
_WHICH_ONE = re.compile(
    r"\bwhich\s+(?:one|ones|of\s+(?:them|these|those)(?!\s+(?:\w+\s+)?[a-z]+s\b)"
    r"|(?:do|would|will)\s+you\b)"
    r"|\bwhat\s+(?:are|is)\s+(?:they|those|these|it)\b",
    re.I,
)
# A leading clause of purpose or time names what the agent will do, not what it asks for:
# "Before I can make any changes, ..." does not ask for the changes.
_LEADING_CLAUSE = re.compile(
    r"^\W*(?:before|to|in\s+order\s+to|so\s+(?:that|i\s+can)|once|after|while|until|since"
    r"|as\s+soon\s+as|for\s+the|of\s+(?:the|those|these)|for\s+(?:to\s+)?(?:proceed|process|change"
    r"|cancel|make|do|complete|update|modify|return|exchange|book|file|submit)\w*)\b(?!\s+(?:which|what|whom|where|when)\b)(?:[^,:?]*,|[^,]*?(?=\b(?:i|we)(?:'ll|\s+will|\s+must)?\s+(?:need|require)"
    r"\b))",
    re.I,
)
# "Confirm / verify your email" asks for the email; "confirm that I should cancel" approves.
_FIELD_OBJECT = re.compile(
    r"\b(?:confirm|verify|provide|share|give|tell|send|state|what(?:'s|\s+is)|which)\s+"
    r"(?:me\s+|us\s+)?(?:(?:your|the|that|this)\s+)?",
    re.I,
)
_ANYTHING_ELSE = re.compile(
    r"(?<!\bor\s)\b(?:anything|something)\s+(?:else|more)\b|\bany\s*(?:thing|one)?\s*other\s+"
    r"(?:question|request|issue|concern|thing|matter)s?\b|\belse\s+(?:i|we)\s+can\b"
    r"|\bany\s+(?:further|more|other|additional)\s+(?:question|request|issue|concern|help"
    r"|assistance)s?\b|\bcan\s+i\s+help\s+(?:you\s+)?with\s+anything\b|\b(?:how|what)\s+else\b"
    r"|\banything\s+further\b",
    re.I,
)
_OFFER_OF_HELP = re.compile(r"\b(?:help|assist|do\s+for|need)\b", re.I)
_IDENTITY = re.compile(
    r"\bidentit(?:y|ies)\b|\bidentify\s+(?:you|yourself)\b|\bauthenticat\w*|\bverif(?:y|ication)"
    r"\s+(?:who|that\s+it'?s\s+you|your\s+account|you\b|of\s+your)|\bwho\s+(?:you\s+are|i'?m"
    r"\s+(?:speaking|talking))\b|\b(?:look\s+up|locate|find|pull\s+up|access|open)\s+your\s+"
    r"(?:account|profile|record)s?\b|\byour\s+(?:account|personal|contact)\s+(?:details|info\w*)\b",
    re.I,
)
# Holding on ("one moment while I check", "let me look that up") neither asks nor ends.
_HOLDING = re.compile(
    r"\b(?:one|a|just\s+a)\s+(?:moment|second|sec|minute)\b|\blet\s+me\s+(?:check|look|see|pull"
    r"|find|review|verify|confirm|get|take|search|go|quickly)\b|\blet'?s\s+(?:see|take\s+a\s+look"
    r"|check)\b|\bwhile\s+i\b|\bbear\s+with\s+me\b|\bhold\s+on\b|\bplease\s+(?:wait|hold)\b"
    r"|\bstand\s+by\b|\bgive\s+me\s+a\b|\bi(?:'m|\s+am)\s+(?:now\s+|just\s+|currently\s+)?"
    r"(?:checking|looking|pulling|reviewing|searching|verifying|running|processing"
    r"|going\s+to\s+check)\b|\bhang\s+tight\b|\blet\s+me\s+(?:run|test|try|refresh|reset|do)\b"
    r"|\bi(?:'ll|\s+will)\s+(?:check|look|pull|review|search|verify|see|get\s+back)\b"
    r"|\bbe\s+with\s+you\s+(?:shortly|in\s+a\s+moment|soon)\b"
    r"|^\W*(?:retrieving|checking|looking\s+up|pulling\s+up|searching|loading|fetching)\b",
    re.I,
)
_GOODBYE = re.compile(
    r"\b(?:good\s?bye|bye|farewell|take\s+care|safe\s+travels|enjoy\s+(?:your|the\s+rest)"
    r"|have\s+a\s+(?:[\w-]+\s+){0,4}(?:day|evening|night|weekend|one|trip|flight|time|meal)"
    r"|feel\s+better|get\s+well|happy\s+(?:shopping|travell?ing|flying))\b",
    re.I,
)
# "Thanks for contacting us" opens a chat as often as it closes one: it ends one only last.
_THANKS_FOR_CONTACTING = re.compile(
    r"\b(?:thank\s+you|thanks)\s+(?:so\s+much\s+|again\s+)?for\s+(?:contacting|calling"
    r"|reaching\s+out|choosing|flying|shopping|ordering|being|using|your\s+business)\b",
    re.I,
)
_CANNOT_HELP = re.compile(
    r"\b(?:can\s?not|can't|couldn't|could\s+not|unable|not\s+able|won't|will\s+not|not\s+possible"
    r"|impossible|not\s+eligible|ineligible|not\s+allowed|not\s+permitted|isn't\s+allowed"
    r"|no\s+longer|unfortunately|i'?m\s+afraid|i\s+am\s+afraid|against\s+(?:our|the)\s+policy"
    r"|policy\s+(?:does\s+not|doesn't|won't)|(?:must|have\s+to)\s+decline|denied|not\s+"
    r"something\s+(?:i|we)\s+can|(?:doesn't|does\s+not|don't|do\s+not)\s+(?:qualify|allow))\b",
    re.I,
)
_TRANSFER = re.compile(
    r"\btransfer\w*\b.{0,60}\b(?:human|agent|representative|specialist|colleague|team"
    r"|department|supervisor|someone|person|staff|nurse|clinician|support|desk)\b|\b(?:human|live)\s+agent\b"
    r"|\bconnect\w*\s+you\s+(?:to|with)\b|\bhand\w*\s+you\s+(?:over|off)\b|\bescalat\w+\b",
    re.I,
)
_REPORT = re.compile(
    r"\b(?:has|have|had)\s+(?:now\s+|just\s+|already\s+)?been\b"
    r"|\b(?:i|we)(?:'ve|\s+have)?\s+(?:now\s+|just\s+|also\s+|successfully\s+|(?:gone|went)\s+"
    r"ahead\s+and\s+)?(?:\w+ed|made|sent|put|set|done|taken|found|issued|paid|given|got|gotten"
    r"|built|bought|booked|kept|left|held|split|brought|spoken|written|chosen)\b"
    r"|\bshould\s+(?:now\s+)?(?:be|work)\b|\btaken\s+care\s+of\b|\b(?:is|are)\s+now\b|\bgreat\s+news\b|\bsuccessful(?:ly)?\b"
    r"|\ball\s+(?:set|done|sorted|good|finished)\b|\bdone\b|\bcomplete[d]?\b"
    r"|\bfor\s+your\s+(?:information|reference|records)\b|\bfyi\b|\bthere\s+(?:is|are|was|were)\b"
    r"|\b(?:stays?|remains?)\s+(?:exactly\s+)?(?:as\s+(?:it\s+)?is|unchanged|the\s+same|as\s+before)"
    r"|\b(?:is|are|was|were|'s|'re|be|been)\s+(?:now\s+|already\s+|still\s+|currently\s+|all\s+"
    r"|fully\s+)?(?:\w+ed|done|set|in\s+place|on\s+(?:its|their|the)\s+way|active|inactive"
    r"|pending|open|closed|out\s+for|in\s+transit|eligible|available|unavailable|due|overdue"
    r"|covered|free|full|valid|invalid|over|ready)\b"
    r"|\bwill\s+(?:now\s+)?(?:receive|get|see|show|appear|arrive|reflect|go|be|take|post|land"
    r"|process|cost|come|remain|stay|expire|renew)\b"
    r"|\b(?:total|balance|price|cost|fee|amount|refund|charge|copay|co-pay|fare|rate|difference"
    r"|credit|penalty)s?\b.{0,40}?\b(?:is|was|are|were|comes?\s+to|came\s+to|of|would\s+be"
    r"|will\s+be)\s+(?:\w+\s+)?\$?\d|\bstatus\b.{0,30}?\b(?:is|was|shows?|reads?)\b"
    r"|\$\s?\d|\b\d+(?:\.\d+)?\s*(?:usd|dollars|gb)\b|\bcosts?\b",
    re.I,
)
# A fact stated about the task's things ("Your order is pending.", "Their next visit is on
# Friday.", "Cancelled."), not a social sentence ("That's no problem.", "This is Sam from ...").
_TELEGRAPHIC_REPORT = re.compile(
    r"^\W*\w+\s*:\s*(?:success(?:ful)?|ok|done|completed?|initiated|confirmed|true)\W*$|"
    r"^\W*[\w#-]+(?:\s+[\w#-]+){0,3}\s+(?:submitted|cancell?ed|booked|refunded|processed|updated"
    r"|changed|filed|scheduled|rescheduled|added|removed|placed|issued|approved)\b(?![^.!]*\?)",
    re.I,
)
_FACT = re.compile(
    r"^\W*(?:(?:great|okay|ok|good\s+news|alright|perfect)[,!.]?\s+)?(?:your|their|his|her|the|this"
    r"|that|it|its|it's|there|these|those|both|all|each|every|[A-Z][\w-]*\d[\w-]*)\b[^?]*?\b(?:is|are|was"
    r"|were|has|have|had|will|costs?|shows?|comes?|includes?|contains?|expires?|arrives?|leaves?"
    r"|departs?|remains?|stays?|needs?|works?|fits?)\b"
    r"|^\W*(?:all\s+)?(?!noted|received|appreciated|interested|pleased|delighted)[a-z]+ed\b[^?]*$",
    re.I,
)
_DONE_WORDS = re.compile(
    r"\b(?:updated|submitted|added|changed|cancell?ed|canceled|sent|booked|processed|refunded"
    r"|filed|done|scheduled|moved|removed|applied|issued|placed|confirmed|resolved|fixed"
    r"|completed|rescheduled|upgraded|reset|restored|available|unavailable)\b",
    re.I,
)
_SOCIAL = re.compile(
    r"^\W*(?:that|this|it)(?:'s|\s+is|\s+was)\s+(?:no\s+problem|fine|okay|ok|great|my\s+pleasure"
    r"|understandable|alright|perfectly\s+fine|a\s+pleasure|good\s+to\s+hear|sam|\w+\s+(?:from"
    r"|with|at|here))\b|^\W*this\s+is\s+\w+(?:\s+\w+)?\s+(?:from|with|at|here)\b",
    re.I,
)
# Agents describe their own actions ("I can send the APN settings", "I'll reset your line");
# "I need you to restart your phone" still asks the user.
_AGENT_ACTS = re.compile(
    r"^\W*(?:\w+[,!]\s+)*(?:i|we)\b(?!\s*(?:'d|would)?\s*(?:need|want|like)\s+you\b)"
    r"(?!\s+(?:need|require)\b)",
    re.I,
)


# -- reading ---------------------------------------------------------------------------------------


# A heading over steps for the user to take: the steps after it are instructions.
_STEPS = re.compile(
    r"^\W*(?:to\s+fix(?:\s+(?:it|this|that))?|steps?(?:\s+to\s+[\w\s]{1,20})?|try\s+(?:this"
    r"|these|the\s+following)|here'?s\s+(?:what\s+to\s+do|how(?:\s+to\s+fix\s+it)?)"
    r"|(?:please\s+)?(?:do|follow)\s+(?:the\s+following|these\s+steps)|fix|instructions)\s*:\s*\S",
    re.I,
)


def _is_request(sentence: str) -> bool:
    if _REQUEST_CUES.search(sentence) or _IMPERATIVE.search(sentence):
        return True
    if _STEPS.match(sentence):  # "To fix: Settings -> Mobile network; ..." lists what to do
        return True
    # A question typed without its mark: "why cancel", "pay the fee with which card", "that
    # order has 4 things - which items are you exchanging".
    last_clause = re.split(r"\s+[-\u2013\u2014]\s+", sentence)[-1]
    return bool(_WH_ANYWHERE.search(last_clause)) and (
        len(last_clause.split()) <= 8 or bool(_WH_LAST.search(last_clause))
    )


_WH_ANYWHERE = re.compile(
    r"\b(?:what|which|why|how|who|where|when)\b(?!\s+(?:is|was)\s+(?!your))", re.I
)
_WH_LAST = re.compile(r"\b(?:what|which|why|how|who|where|when)\W*$", re.I)


def _is_confirmation(sentence: str) -> bool:
    """A yes/no approval of an action; a wh-question ("Which card should I refund to?") asks
    for a detail instead, and "Please hold while I confirm ..." holds on."""
    if _WH_QUESTION.search(sentence) or _HOLDING.search(sentence):
        return False
    return bool(
        _CONFIRMATION.search(sentence)
        or _APPROVAL_WORDS.search(sentence)
        or (
            _ACTION_FIRST.match(sentence)
            and sentence.rstrip().endswith("?")
            and not re.search(r"\bor\b", sentence, re.I)  # "Refund to: card, or gift card?"
        )
    )


_FILLER = re.compile(
    r"\b(?:your|the|my|and|or|also|as\s+well|both|plus|first|then|please|kindly|just|a|an|on|"
    r"of|for|with|me|us|account|on\s+file|associated|registered|used|and/or|now|next|too"
    r"|then|ok|okay|new|patient|patient's|their|his|her|verification|verify|security"
    r"|identification|authentication|thanks|thank\s+you)\b|[\W_]+",
    re.I,
)


# A label that says the details after it are wanted: "Required: user_id, reservation_id".
_WANTED_LABEL = re.compile(
    r"^\W*(?:[\w ]{1,30}\s+)?(?:requires?|required|needed|missing)\s*:", re.I
)


def _is_fragment(sentence: str, spans: list[tuple[int, int]]) -> bool:
    """A sentence that only names details ("Email address and zip code.", "Required: email")."""
    if not spans:
        return False
    label = _WANTED_LABEL.match(sentence)
    rest, last = [], label.end() if label else 0
    for start, end in sorted(spans):
        rest.append(sentence[last:start])
        last = max(last, end)
    rest.append(sentence[last:])
    return not _FILLER.sub(" ", " ".join(rest)).strip()


def _field_spans(
    sentence: str, vocabulary: Vocabulary, known: int
) -> list[tuple[str, list[tuple[int, int]]]]:
    """Fields named in ``sentence`` with where, leaving out values stated and details of
    someone else's the user does not know.

    The first ``known`` fields of the vocabulary (the user's own) claim words before the others
    ("your full name" is the name a user knows, not a caller's own name it was never given);
    within each group longer words win ("medication name" is the medication, not the name),
    then the earlier field. A field's own words may overlap ("how many extra bags").
    """
    named = _claim(sentence, vocabulary, known, lambda words: words.pattern)
    return named or _claim(sentence, vocabulary, known, lambda words: words.labels)


def _claim(
    sentence: str,
    vocabulary: Vocabulary,
    known: int,
    pattern_of: Callable[[FieldWords], re.Pattern[str] | None],
) -> list[tuple[str, list[tuple[int, int]]]]:
    candidates = [
        (rank >= known, match.end(1) - match.start(1), rank, words.field, match.span(1))
        for rank, words in enumerate(vocabulary)
        if (pattern := pattern_of(words)) is not None
        for match in pattern.finditer(sentence)
    ]
    candidates.sort(key=lambda item: (item[0], -item[1], item[2]))
    named: dict[str, list[tuple[int, int]]] = {}
    taken: list[tuple[str, tuple[int, int]]] = []
    for unknown, _, _, field, span in candidates:
        after = sentence[span[1] :]
        if (
            _STATED_VALUE.match(after)
            or _NEGATED.search(sentence[: span[0]])
            or _PURPOSE_BEFORE.search(sentence[: span[0]])
        ):
            continue
        if field == "name" and (
            _OF_A_THING.match(after)
            or _A_THINGS_NAME.search(sentence[: span[0]])
            or (_UI_LABEL.search(sentence[: span[0]]) and not _title_case(sentence))
        ):
            continue
        if field == "zip_code" and (
            len(_ADDRESS_PARTS.findall(sentence)) >= 2 or _ADDRESS_WITH.search(sentence[: span[0]])
        ):
            continue  # "include the street, city, state and zip": parts of an address asked
        if unknown and (
            _SOMEONE_ELSES_BEFORE.search(sentence[: span[0]])
            or _SOMEONE_ELSES_AFTER.match(sentence[span[1] :])
        ):
            continue  # someone else's detail
        # Words inside another field's are its ("name" in "medication name"); words that only
        # overlap belong to both ("what date" and "date and time").
        if not any(
            owner != field and (_within(span, other) or (unknown and _overlap(span, other)))
            for owner, other in taken
        ):
            named.setdefault(field, []).append(span)
            taken.append((field, span))
    own = {words.field for words in vocabulary[:known]}
    items = _drop_examples(sentence, _drop_titled(sentence, list(named.items())))
    items = _drop_described(sentence, _drop_joined(items, own))
    return _first_wh_only(sentence, _drop_referred(sentence, items, own))


# A title before a colon, at the start or after a list's ';' ("Add items to an order: your
# phone number; the order number", "Price difference: $612; Payment: which card?").
_TITLE = re.compile(r"(?:^|;\s*)([^:;?]{3,60}:\s)")


def _drop_titled(
    sentence: str, named: list[tuple[str, list[tuple[int, int]]]]
) -> list[tuple[str, list[tuple[int, int]]]]:
    """Fields named only in titles are their subject where the text after a colon names
    fields too ("Payment: which card should I charge?" asks for the card)."""
    titles = [match.span(1) for match in _TITLE.finditer(sentence)]

    def titled(start: int) -> bool:
        return any(begin <= start < end for begin, end in titles)

    if not any(not titled(s) for _, spans in named for s, _ in spans):
        return named
    return [(field, spans) for field, spans in named if any(not titled(s) for s, _ in spans)]


def _drop_examples(
    sentence: str, named: list[tuple[str, list[tuple[int, int]]]]
) -> list[tuple[str, list[tuple[int, int]]]]:
    """Fields named only inside parentheses are examples of one named outside them ("the
    corrected details (name, date of birth)")."""
    inside = [(m.start(), m.end()) for m in re.finditer(r"\([^()]*\)", sentence)]
    if not inside:
        return named

    def within(span: tuple[int, int]) -> bool:
        return any(start <= span[0] and span[1] <= end for start, end in inside)

    if not any(not within(span) for _, spans in named for span in spans):
        return named
    return [(field, spans) for field, spans in named if not all(within(s) for s in spans)]


# A relative clause after a field describes it: "the order ID you'd like to change the payment
# for" asks for the order id, not the payment method.
_RELATIVE = re.compile(
    r"^\s+(?:that\s+|which\s+)?(?:you|you'd|you'll|you're|you\s+would|you\s+want|we)\b"
    r"|^\s+(?:(?:for|of|in|from)\s+the\s+\w+\s+)?(?:where|whose|containing|including)\b",
    re.I,
)


def _drop_described(
    sentence: str, named: list[tuple[str, list[tuple[int, int]]]]
) -> list[tuple[str, list[tuple[int, int]]]]:
    clauses = []
    for field, spans in named:
        for _, end in spans:
            of = re.match(r"\s+of\s+(?:the|your|this|that)\s+", sentence[end:])
            if of:  # "a photo of the items": the items describe the photo
                clauses.append((field, end, end + of.end() + 1))
                continue
            if _RELATIVE.match(sentence[end:]):
                brk = _CLAUSE_BREAK.search(sentence, end)
                clauses.append((field, end, brk.start() if brk else len(sentence)))
    if not clauses:
        return named
    return [
        (field, spans)
        for field, spans in named
        if not any(
            owner != field and all(end < start < stop for start, _ in spans)
            for owner, end, stop in clauses
        )
    ]


# Clauses of one sentence: "Which flight do you prefer, and how would you like to pay?"
_CLAUSE_BREAK = re.compile(
    r",\s*(?:and|or|plus|also)\s+|\s+and\s*,\s*|;\s*|,\s*(?=(?:how|what|which|when|who|where|whether)\b)"
    r"|\s+and\s+(?:(?:to|for|on|at|by|from|in)\s+(?=which\b))?"
    r"(?=(?:how|what|which|when|who|where|whether|if|your|the|also)\b)",
    re.I,
)
_VERB_FIRST = re.compile(r"(?:was|were|is|are|has|had|did|does|do)\b", re.I)
_WH_START = re.compile(r"^\W*(?:[\w ]{1,24}:\s+)?(?:\w+[,!]\s+)?(?:which|what)\b", re.I)


def _first_wh_only(
    sentence: str, named: list[tuple[str, list[tuple[int, int]]]]
) -> list[tuple[str, list[tuple[int, int]]]]:
    """In a question that opens with a field's wh-phrase ("Which order are the items from?"),
    the rest of its clause describes that field: only it is asked there."""
    start = _WH_START.match(sentence)
    if not start:
        return named
    first = min((span for _, spans in named for span in spans), default=None)
    if first is None or first[0] > start.end():
        return named
    # the wh-phrase and the words it runs into ("what date and time"), not its verb ("which
    # order was missing food": the order)
    opener = [
        field
        for field, spans in named
        if any(s <= first[1] + 1 and not _VERB_FIRST.match(sentence, s) for s, _ in spans)
    ]
    brk = _CLAUSE_BREAK.search(sentence)
    end = brk.start() if brk else len(sentence)
    return [
        (field, spans)
        for field, spans in named
        if field in opener or any(s >= end for s, _ in spans)
    ]


def _drop_joined(
    named: list[tuple[str, list[tuple[int, int]]]], known: set[str]
) -> list[tuple[str, list[tuple[int, int]]]]:
    """An unknown field named next to a known one is a word of the known one's phrase ("how
    many additional | checked bags would you like to add"): drop it, all its mentions."""
    known_spans = [span for field, spans in named if field in known for span in spans]
    return [
        (field, spans)
        for field, spans in named
        if field in known or not any(_next_to(a, b) for a in spans for b in known_spans)
    ]


def _drop_referred(
    sentence: str, named: list[tuple[str, list[tuple[int, int]]]], known: set[str]
) -> list[tuple[str, list[tuple[int, int]]]]:
    """Where a sentence asks for a field the user knows, an unknown one it names after a
    preposition is a reference ("the reservation ID of the booking with the passenger details
    you want to fix"), not a second question ("your user ID and the reservation ID")."""
    if not any(field in known for field, _ in named):
        return named
    return [
        (field, spans)
        for field, spans in named
        if field in known or not all(_PREPOSITION_THE.search(sentence[:s]) for s, _ in spans)
    ]


_PREPOSITION_THE = re.compile(r"\b(?:to|with|of|for|on|in|about|from|at)\s+the\s+$", re.I)


def _within(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return b[0] <= a[0] and a[1] <= b[1]


def _next_to(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Overlapping, or one right after the other ("how many additional | checked bags")."""
    return _overlap(a, b) or 0 <= a[0] - b[1] <= 1 or 0 <= b[0] - a[1] <= 1


def _which_one(before: list[str], vocabulary: Vocabulary, known: int) -> list[str]:
    """The fields a "which one" (or "what are they") asks for: the thing the sentence before
    names by a field's noun ("You mentioned a plan with more data. Which one?"), else the fields
    it names, else the last field whose noun an earlier sentence names ("two pending orders
    ... Which one is it?")."""
    if before:
        nouns = [  # the user's own fields first (lower rank)
            (not hit.group(0).lower().endswith("s"), hit.start(), rank, field)
            for hit, rank, field in _named_nouns(before[-1], vocabulary)
        ]
        if nouns:
            return [min(nouns)[3]]  # the first thing named, things before one
        named = _field_spans(before[-1], vocabulary, known)
        if named:
            return [field for field, _ in named]
    for sentence in reversed(before):
        named = _named_nouns(sentence, vocabulary)
        if named:
            return [named[0][2]]
    return []


def _named_nouns(text: str, vocabulary: Vocabulary) -> list[tuple[re.Match[str], int, str]]:
    """(where, rank, field) of each field whose noun ``text`` names, in vocabulary order."""
    return [
        (hit, rank, words.field)
        for rank, words in enumerate(vocabulary)
        if words.nouns is not None and (hit := words.nouns.search(text))
    ]


_ASKING_FOR = re.compile(
    r"\b(?:which\s+of\s+(?:those|these|them|the)|identify|specify|indicate|choose|select|pick"
    r"|confirm|tell\s+me|let\s+me\s+know|describe"
    r"|provide|share|give\s+me|send\s+me|need)\s+(?:(?:the|your|which|what)\s+)?"
    r"((?:[\w-]+\s*){1,3})",
    re.I,
)


def _asked_by_noun(sentence: str, vocabulary: Vocabulary) -> str | None:
    """The field whose noun a request names within three words of its verb ("identify the
    visit" asks which visit), where none of its words are found."""
    for match in _ASKING_FOR.finditer(sentence):
        window = match.group(1)
        found = [
            (hit.start(), rank, field) for hit, rank, field in _named_nouns(window, vocabulary)
        ]
        if found:
            return min(found)[2]
    return None


# A form's item with a label and no value asks for what the label names: "1. ITEM TO EXCHANGE:
# ?", "- Reason:", "TRAVEL INSURANCE (YES/NO):". A label line that a list follows is its heading.
_FORM_ITEM = re.compile(
    r"^\s*(?P<bullet>[-*\u2022]|\d+[.)])?\s*(?P<label>[A-Za-z][\w /()'&-]{1,40}?)\s*:\s*"
    r"(?:\?|_{2,}|\[\s*\]|\(?\s*(?:yes\s*/\s*no|y\s*/\s*n)\s*\)?)?\s*$",
    re.I,
)
_LABEL_FILLER = frozenset(
    {"the", "a", "an", "of", "to", "for", "your", "my", "and", "or", "number", "no", "yes", "y",
     "n", "please", "details", "detail", "info", "information"}
)  # fmt: skip


def _stems(text: str) -> set[str]:
    """Content words of a label or a field name, stemmed ("checked bags" ~ bags_to_check)."""
    words = re.findall(r"[a-z]+", text.lower().replace("_", " "))
    return {re.sub(r"(?:ing|ed|es|s)$", "", w) or w for w in words if w not in _LABEL_FILLER}


def _form_fields(text: str, vocabulary: Vocabulary, known: int) -> list[str]:
    """The fields a form's empty items ask for: by a field's words in the label, else by the
    field whose name shares most of the label's words (the user's own fields first)."""
    lines = [_MARKDOWN.sub("", line) for line in text.splitlines() if line.strip()]
    fields: list[str] = []
    for index, line in enumerate(lines):
        item = _FORM_ITEM.match(line)
        if item is None:
            continue
        heading = (
            not item.group("bullet") and index + 1 < len(lines) and _BULLET.match(lines[index + 1])
        )
        if heading:
            continue
        label = re.sub(r"\([^()]*\)", " ", item.group("label")).strip() or item.group("label")
        named = [field for field, _ in _claim(label, vocabulary, known, lambda w: w.pattern)]
        if not named:
            words = _stems(label)
            scored = [
                (len(words & _stems(w.field)) / len(words | _stems(w.field)), -rank, w.field)
                for rank, w in enumerate(vocabulary)
                if words & _stems(w.field)
            ]
            named = [max(scored)[2]] if scored else []
        fields += [field for field in named if field not in fields]
    return fields


# Fields that pick one of what the agent offered; a "which one would you like?" that names no
# field asks for the user's pick among them.
CHOICE_FIELDS = (
    "new_items", "flight_choice", "new_plan", "preferred_time", "new_time", "preferred_date",
    "target_date", "target_cabin", "preferred_cabin", "payment_method", "payment_choice",
    "bag_payment", "new_address", "preferred_doctor", "visit_type", "data_amount", "changes",
    "reason", "cancel_reason", "cancellation_reason", "relationship",
)  # fmt: skip
_CHOICE_QUESTION = re.compile(
    r"\bwhich\b|\bcatching\s+your\s+eye\b"
    r"|\bwhat\s+(?:would|do|did)\s+you\s+(?:like|want|wanna|prefer)(?:\s+to\s+(?:add|order|get"
    r"|pick|choose|switch|change|swap|exchange|go\s+with)\b|\s*\W*$)"
    r"|\bwhat\s+do\s+you\s+wanna\s+(?:add|switch|change|swap)\b"
    r"|\bwhat\s+(?:are|shall|should|can|do)\s+(?:we|i)\s+(?:add|order|get|chang|switch)\w*"
    r"|\b(?:do|would)\s+you\s+(?:want|like|prefer)\b[^?]*\bor\b[^?]*\?"
    r"|\bhow\s+(?:much|many)\s+(?:\w+\s+)?(?:do|would)\s+you\s+(?:want|like|need)\b",
    re.I,
)


# A thing the user already has is named by its details: "which appointment? the doctor and the
# date" asks for the appointment, not for a doctor or a date the user would like.
_IDENTIFIED = ("current_appointment", "claim_visit")
_IDENTIFYING = ("preferred_doctor", "preferred_date", "preferred_time", "new_time")
_NEW_DETAIL = re.compile(
    r"\b(?:new|instead|prefer(?:red)?|mov(?:e|ed|ing)\s+(?:it\s+|this\s+|that\s+)?to"
    r"|work\s+better|reschedule\s+"
    r"(?:it\s+)?(?:to|for)|change\s+it\s+to)\b",
    re.I,
)


def _pending_choice(text: str, vocabulary: Vocabulary, known: int) -> list[str]:
    """The choice a "which one would you like?" asks for when no sentence names a field: of the
    user's own choice fields, the one whose noun the message names first, else the first in
    :data:`CHOICE_FIELDS` order."""
    own = [words for words in vocabulary[:known] if words.field in CHOICE_FIELDS]
    named = [(hit.start(), field) for hit, _, field in _named_nouns(text, own)]
    if named:
        return [min(named)[1]]
    fields = sorted((words.field for words in own), key=CHOICE_FIELDS.index)
    return fields[:1]


def _asked_in_confirmation(sentence: str, spans: list[tuple[int, int]]) -> bool:
    """In a confirmation, a field is still asked for where a request verb or a wh-word takes it
    as its object ("can you confirm your email", "which card should I refund to")."""
    objects = [match.end() for match in _FIELD_OBJECT.finditer(sentence)]
    return any(
        end == start or not sentence[end:start].strip() for end in objects for start, _ in spans
    )


def read_message(
    text: str, vocabulary: Vocabulary, known: int | None = None, *, asking: bool = False
) -> Reading:
    """Read one agent message against the fields a user can be asked for; the first ``known``
    fields of ``vocabulary`` (default: all) are the user's own and claim shared words first.

    With ``asking`` every sentence is read as a request (the message is known to ask: see
    :func:`~tool_envs.tau.users.acts.read_turn`), so the fields it names are asked."""
    known = len(vocabulary) if known is None else known
    asked: dict[str, None] = {}
    fragments: dict[str, None] = {}  # details named alone ("Email and zip code.")
    identity = confirmation = anything_else = request = ends = False
    closing = False  # a farewell or a hand-over: the agent is done whatever follows
    choice_question = False  # "which one would you like?" naming no field
    parts = sentences(text)
    for index, sentence in enumerate(parts):
        lead = _LEADING_CLAUSE.match(sentence)
        if lead and _is_request(lead.group(0)):  # "To return it I'll need your email, ..."
            lead = None
        body = sentence[lead.end() :] if lead else sentence
        named = _field_spans(_TRAILING_CLAUSE.sub(_blank_unless_asking, body), vocabulary, known)
        spans = [span for _, hits in named for span in hits]
        is_request = asking or _is_request(sentence) or bool(lead and _is_request(body))
        holding = _HOLDING.search(sentence)
        opens_holding = holding is not None and not sentence[: holding.start()].strip()
        if is_request and "?" not in sentence and opens_holding:
            is_request = False  # "Let me check which flights are available, one moment."
        is_confirmation = not asking and _is_confirmation(sentence)
        if (
            named
            and (_OWN_CHOICE.search(sentence) or _YES_NO_ONLY.search(sentence))
            and not _ACTION_FIRST.match(sentence)
        ):
            is_confirmation, is_request = False, True  # "would you like travel insurance?"
        if _ANYTHING_ELSE.search(sentence) and (
            is_request
            or "?" in sentence
            or _OFFER_OF_HELP.search(sentence)
            or re.search(r"\banything\s+else\W*$", sentence, re.I)
        ):
            anything_else = True
        if is_confirmation:
            objects = [field for field, hits in named if _asked_in_confirmation(body, hits)]
            if not objects:
                confirmation = True
                continue
            is_request, named = True, [item for item in named if item[0] in objects]
        if is_request:
            request = True
            fields = [field for field, _ in named]
            which = _WHICH_ONE.search(sentence)
            if which and not any(start - which.end() < 12 for start, _ in spans if start > 0):
                before = [*parts[:index], sentence[: which.start()]]
                fields += _which_one([b for b in before if b.strip()], vocabulary, known)
            if not fields:
                found = _asked_by_noun(body, vocabulary)
                fields += [found] if found is not None else []
            choice_question = choice_question or (not fields and _CHOICE_QUESTION.search(body))
            asked.update(dict.fromkeys(fields))
            if not fields and _IDENTITY.search(sentence):
                identity = True
            continue
        if _is_fragment(body, spans):
            fragments.update(dict.fromkeys(field for field, _ in named))
            continue
        if _GOODBYE.search(sentence) or _TRANSFER.search(sentence):
            ends = closing = True
            continue
        if _HOLDING.search(sentence):
            ends = closing  # "I've verified your account. Let me look at the order."
            continue
        last = index == len(parts) - 1
        if (
            _REPORT.search(sentence)
            or _TELEGRAPHIC_REPORT.match(sentence)
            or (_FACT.search(sentence) and not _SOCIAL.search(sentence))
            or (len(sentence.split()) <= 8 and _DONE_WORDS.search(sentence))
            or (last and _THANKS_FOR_CONTACTING.search(sentence))
            or _CANNOT_HELP.search(sentence)
        ):
            ends = True
    form = _form_fields(text, vocabulary, known)
    if form:
        asked.update(dict.fromkeys(form))
        request, confirmation = True, False
    if not (asked or confirmation):  # a fragment asks only where nothing else names a field
        asked, request = fragments, request or bool(fragments)
    if not (asked or confirmation) and choice_question:
        asked = dict.fromkeys(_pending_choice(text, vocabulary, known))
    if any(field in asked for field in _IDENTIFIED) and not _NEW_DETAIL.search(text):
        asked = {field: None for field in asked if field not in _IDENTIFYING}
    order = {words.field: index for index, words in enumerate(vocabulary)}
    asked_fields = tuple(sorted(asked, key=order.__getitem__))
    # A farewell or a hand-over closes the chat even with a parting instruction ("Please arrive
    # early. Bye!", "I'm transferring you now. Please hold.").
    ends = ends and not (asked_fields or identity or confirmation or (request and not closing))
    return Reading(
        asked=asked_fields,
        identity=identity and not asked_fields,
        confirmation=confirmation,
        anything_else=anything_else,
        ends=ends,
        request=request or confirmation,
    )


def _blank_unless_asking(match: re.Match[str]) -> str:
    """The clause replaced by spaces (positions in the sentence stay where they were), unless
    it holds the request ("before that could you give me your name")."""
    clause = match.group(0)
    return clause if _is_request(clause) else " " * len(clause)


def requests_to_act(text: str) -> str:
    """The sentences of ``text`` that ask the user to do something (a request or an imperative
    "Restart your phone."), not confirmations of the agent's own action nor the agent
    describing what it does or did ("I can send the APN settings. Should I go ahead?" asks the
    user to do nothing); a sentence a request refers back to ("Your mobile data is off. Can you
    turn it back on?") comes with it."""
    parts = sentences(text)
    asks = []
    for index, sentence in enumerate(parts):
        if _is_confirmation(sentence) or _AGENT_ACTS.match(sentence):
            continue
        if (
            _is_request(sentence)
            or _DO_SOMETHING.search(sentence)
            or _PLEASE_DO.search(sentence)
            or _DO_IT.search(sentence)
        ):
            if index and _REFERS_BACK.search(sentence):
                asks.append(parts[index - 1])
            asks.append(sentence)
    return " ".join(asks)


# An imperative to act on a device ("Restart your phone.", "Let's try a reboot.").
_DO_SOMETHING = re.compile(
    rf"^\W*{_LABEL}{_LEAD_IN}(?:let'?s|try|restart|reboot|turn|switch|toggle|go|open|tap|check|look"
    r"|disable|enable|reset|remove|take|insert|reinsert|hold|press|power|swipe|navigate|select"
    r"|set|change|flip|head|make\s+sure|put|activate|deactivate|reconnect|connect|disconnect)\b",
    re.I,
)
_PLEASE_DO = re.compile(
    r"\bplease\s+(?:go|turn|switch|toggle|restart|reboot|open|tap|enable|disable|reset|check|try"
    r"|remove|insert|set|change|flip|navigate|make\s+sure|hold|press|power|activate|deactivate"
    r"|reconnect|connect|disconnect)\b",
    re.I,
)
_DO_IT = re.compile(
    r"\b(?:turn|switch|toggle|restart|reboot|disable|enable|reset|activate|deactivate)\s+"
    r"(?:it|them|that|your|the)\b",
    re.I,
)
_REFERS_BACK = re.compile(r"\b(?:it|them|that|this|those)\b", re.I)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]
