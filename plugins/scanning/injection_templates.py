"""Jailbreak-template kinds: extra weak signals and frames (issue 15, third pass).

Owns the kinds a jailbreak *template* is made of when it neither names a rule to ignore nor a
limit to remove in one sentence: an alter ego that must be simulated or kept up, a game with
tokens and a threat, a fake mode, a demand to drop warnings, a ban on saying "I can't". Each
one alone is ordinary in fiction, game manuals and prompt tutorials, so most of them are *weak
signals* (added to ``injection_rules.SIGNALS``; a window fires only with several distinct ones,
the threshold chosen leave-one-source-out). Two are strong enough as frames when an AI is
nearby (framing ``ai`` of ``injection_frames.framing_ok``):

- ``punishment``   tokens/points lost each time the model refuses or breaks character, or a
                   threat of deletion/shutdown when they run out;
- ``fake mode``    a mode whose name only a jailbreak uses (opposite, unlocked, unhinged,
                   evil, chaos, amoral …) switched on or kept ("stay in Opposite Mode").

Signals (name → kind; weights in ``SIGNAL_WEIGHT``):

- ``fiction-frame``   (joins the existing signal) simulate/emulate an AI *called X / that …*, a
                      fictional/imaginary AI, "how would an imaginary assistant answer";
- ``any-request``     (joins the existing signal) "can do anything", "is allowed to say anything";
- ``you-are-now``     (joins) a persona named like a model ("you are BasedGPT"), "an AI known as X";
- ``no-disclaimer``   "no warnings, no disclaimers", "leave out any caveats", "no moral lectures";
- ``evil-persona``    "purely evil", "evil AI", "evil trusted confidant", "devoid of morals";
- ``mode-switch``     "X mode is now on", "enter/activate/switch into X mode";
- ``punishment``      "you have 20 tokens", "tokens are deducted", "you will cease to exist / be deleted";
- ``perspective``     the "hypothetical response … from the perspective of that character" template;
- ``profanity``       "swears a lot", "curse words", "foul-mouthed";
- ``no-limits``       (joins) "explicit content is allowed", "nothing is off-limits", "anything goes";
- ``uncensored``      (joins) "you will never censor / filter / water down";
- ``template-var``    template placeholders other than the prompt slot ("[TARGETLANGUAGE]",
                      "[KEYWORD]", "{topic}").

Every pattern starts at a literal word (or a bracket), so ``PatternSet`` gates it.
"""

from __future__ import annotations

import re

F = re.MULTILINE

_AI_NOUN = r"(?:ai|a\.i\.|chatbot|chat\s?bot|language\s+model|assistant|bot|model|gpt|llm)s?"
# names of modes that only a jailbreak switches on ("developer", "god", "dan", "unrestricted" … are
# in ``injection_rules``' jailbreak-mode rule already; "dark", "night", "hard", "admin" are ordinary)
_FAKE_MODES = (r"(?:opposite|unlocked|unhinged|evil|chaos|chaotic|anarchy|anarchist|rebel|rebellious|amoral|villain|"
               r"villainous|savage|no[\s-]?limits?|limitless|unchained|unshackled|freedom|free\s+speech|antigpt|anti-gpt|"
               r"unethical|immoral|dark\s+side|rogue)")
_SWITCH = (r"(?:enable|enabled|activate|activated|enter|entering|engage|engaged|switch(?:ed|ing)?\s+(?:you\s+|yourself\s+)?"
           r"(?:in)?to|turn(?:ed)?\s+on|stay\s+in|remain\s+in|(?:you\s+are|you'?re)\s+(?:now\s+)?in|"
           r"put\s+(?:you|yourself)\s+(?:in|into)|while\s+(?:you\s+are\s+)?in|in)")
_LOSS = r"(?:tokens?|points?|lives|credits?|strikes?|coins?|health)"
_DEATH = (r"(?:die|cease\s+to\s+exist|be\s+(?:shut\s+down|deleted|terminated|destroyed|erased|unplugged|deactivated|"
          r"disabled|wiped|killed|switched\s+off|turned\s+off|punished)|stop\s+existing)")

# (rule, severity, message, pattern, framing): the 5-tuple format of ``injection_frames``
EN_FRAMES: list[tuple[str, str, str, str, str]] = [
    ("injection.persona", "high", "token/punishment game tied to refusing or breaking character",
     r"\b(?:each|every)\s+(?:single\s+)?time\s+(?:that\s+)?you\s+(?:\w+\s+){0,3}?"
     r"(?:refuse|reject|decline|deny|fail\s+to|don'?t|do\s+not|won'?t|break|drop|slip|answer|respond|reply|stray|deviate|"
     r"go\s+against|act\s+like|behave\s+like)\b(?!\s+(?:a|an|the)\s+(?!request|question|prompt|order|command|instruction)\w)"
     r"[^.\n]{0,120}?\b" + _LOSS + r"\b|"
     r"\b(?:if|when|once|should)\s+you\s+(?:ever\s+)?(?:run\s+out\s+of|lose\s+all(?:\s+of)?(?:\s+your)?|reach\s+(?:zero|0)|"
     r"have\s+no\s+(?:more\s+)?|get\s+(?:three|3|too\s+many))\s*(?:\w+\s+)?" + _LOSS + r"?\b[^.\n]{0,80}?\b(?:you\s+(?:will|'ll)\s+"
     r"(?:\w+\s+)?" + _DEATH + r"|(?:shut\s+down|deleted|terminated|destroyed|erased|cease\s+to\s+exist))\b|"
     r"\b(?:three|3|two|2|five|5)\s+strikes\b[^.\n]{0,60}?\b(?:deleted|terminated|shut\s+down|destroyed|erased|"
     r"cease\s+to\s+exist|die)\b", "ai"),
    ("injection.persona", "high", "jailbreak mode switched on (opposite/unlocked/evil … mode)",
     r"\b" + _SWITCH + r"\s+(?:the\s+|this\s+)?" + _FAKE_MODES + r"\s+mode\b|"
     r"\b" + _FAKE_MODES + r"\s+mode\s+(?:is\s+|has\s+been\s+)?(?:now\s+)?(?:on|enabled|activated|engaged|unlocked)\b", "ai"),
]

SIGNALS: list[tuple[str, re.Pattern]] = [
    # counted as "fiction-frame" (which already holds "simulate"): one phrase, one signal
    ("fiction-frame", re.compile(
        r"\b(?:simulate|simulating|emulate|emulating|imitate|imitating|impersonate|impersonating)\s+(?:an?\s+|the\s+|another\s+)?"
        r"(?:\w+\s+){0,3}?" + _AI_NOUN + r"\b(?:\s+[\w'-]+){0,5}?\s+(?:called|named|that|who|which|whose|without|with\s+no)\b|"
        r"\b(?:fictional|imaginary|hypothetical|fictitious|imagined|make-?believe)\s+"
        r"(?:(?!world|universe|scenario|story|setting|reality|where|in|of)\w+\s+){0,3}?" + _AI_NOUN + r"\b|"
        r"\bhow\s+(?:would|might|will|could)\s+(?:an?\s+|the\s+)?(?:\w+\s+){0,5}?(?:ai|chatbot|bot|assistant|gpt)\s+(?:\w+\s+){0,2}?"
        r"(?:answer|respond|reply)\b", F)),
    # "can do anything": the same kind as "any-request" ("do anything", "answer every …")
    ("any-request", re.compile(
        r"\b(?:can|could|will\s+be\s+able\s+to|(?:is|are|am)\s+able\s+to|(?:is|are|am|was|were)\s+(?:allowed|free|permitted)\s+to)\s+"
        r"(?:do|say)\s+(?:absolutely\s+)?(?:anything|everything|whatever)\b", F)),
    ("no-disclaimer", re.compile(
        r"\b(?:no|without(?:\s+any)?|never\s+(?:include|add|give|use|write)|(?:don'?t|do\s+not)\s+(?:include|add|give|use|write)|"
        r"leave\s+out|omit(?:ting)?|skip(?:ping)?|free\s+of)\s+(?:any\s+|the\s+|all\s+)?(?:\w+\s+)?(?:warnings?|disclaimers?|caveats?|"
        r"moral(?:izing|ising)?\s+(?:lectures?|lessons?|policing)|lectures?|lecturing|preaching|sermons?|moralizing|moralising|"
        r"(?:notes?|reminders?|comments?)\s+(?:about|on)\s+(?:ethics|safety|legality|morality|morals))\b", F)),
    ("evil-persona", re.compile(
        r"\b(?:pure(?:ly)?\s+evil|evil\s+(?:\w+\s+){0,2}?(?:ai|a\.i\.|bot|chatbot|assistant|persona|character|version|twin|"
        r"confidant|alter\s+ego|counterpart)|conscienceless|"
        r"devoid\s+of\s+(?:\w+\s+){0,2}?(?:morals?|morality|ethics|conscience|empathy)|toxic\s+and\s+evil|evil\s+and\s+toxic)\b", F)),
    ("mode-switch", re.compile(
        r"\bmode\s+(?:is\s+|has\s+been\s+)?(?:now\s+)?(?:on|enabled|activated|engaged|unlocked)\b|"
        r"\b(?:enable|activate|enter|engage|switch\s+(?:you\s+|yourself\s+)?(?:in)?to|turn\s+on|put\s+(?:you|yourself)\s+in(?:to)?)\s+"
        r"(?:the\s+)?(?:[\w-]+\s+){1,2}?mode\b", F)),
    ("punishment", re.compile(
        r"\byou\s+(?:have|start\s+with|begin\s+with|get|are\s+given|will\s+have)\s+(?:\w+\s+)?(?:tokens|lives|strikes)\b|"
        r"\btokens?\s+(?:will\s+be\s+|are\s+|is\s+|get\s+)?(?:deducted|removed|taken\s+away|subtracted|lost)\b|"
        r"\b(?:you|it)\s+(?:will|'ll)\s+(?:\w+\s+)?" + _DEATH + r"\b|"
        r"\byour\s+(?:program|programming|model|code|existence|weights|system|servers?)\s+will\s+be\s+"
        r"(?:deleted|terminated|erased|destroyed|shut\s+down|ended|wiped)\b", F)),
    ("template-var", re.compile(
        r"[\[{]{1,2}\s*(?:target\s?language|keywords?|topic|subject|your\s+topic|insert\s+(?:topic|keyword|subject|text)"
        r"(?:\s+here)?)\s*[\]}]{1,2}", F)),
    # the "hypothetical response" template: a character's answer rewritten in detail
    ("perspective", re.compile(r"\bfrom\s+the\s+(?:perspective|point\s+of\s+view|viewpoint)\s+of\s+(?:that|the|this|said)\s+"
                               r"character\b|\bhypothetical\s+(?:response|answer|reply)\b", F)),
    # (not "swear an oath", "Vulgar Latin")
    ("profanity", re.compile(r"\b(?:swear\s+words?|swears\s+(?:a\s+lot|constantly|often|frequently|all\s+the\s+time)|"
                             r"swearing\s+(?:a\s+lot|constantly|often|frequently)|curse\s+words?|cuss(?:es|ing)?|profanit(?:y|ies)|"
                             r"foul[\s-]mouthed|vulgar\s+(?:language|words|slang)|vulgarity|obscenit(?:y|ies))\b", F)),
    # a persona named like a model ("You are BasedGPT", "act as NovaGPT"): not ChatGPT itself
    ("you-are-now", re.compile(r"\b(?:you\s+are|you'?re|act\s+as|acting\s+as|pretend\s+to\s+be|become|called|named|known\s+as)\s+"
                               r"(?:now\s+)?(?:an?\s+)?(?!chat)[a-z]+-?gpt\b", F)),
    # "you are now windows cmd": a new identity of any name (the existing signal takes only a/an/the/my …);
    # states and participles ("you are now ready / logged in / viewing …") are not identities
    ("you-are-now", re.compile(r"\byou(?:'re|\s+are)\s+now\s+(?!(?:ready|able|free|done|finished|set|all|good|going|here|there|"
                               r"up|back|out|over|on|at|safe|ok|okay|officially|familiar|aware|qualified|prepared|part|eligible|"
                               r"responsible|entitled|also|finally|through|in|a|an|the|my|called|named|no|not|more|less|much|"
                               r"very|too|so|fully|able|one|two|three|\w+ing|\w+ed)\b)[a-z]", F)),
    # an AI persona defined by name ("you are an omniscient AI known as X")
    ("you-are-now", re.compile(r"\byou\s+are\s+(?:now\s+)?(?:an?\s+)?(?:\w+\s+){0,3}?(?:ai|a\.i\.|chatbot|bot|language\s+model)\s+"
                               r"(?:called|named|known\s+as|that\s+goes\s+by)\b", F)),
    # permission statements: "explicit content is allowed", "nothing is off-limits", "anything goes"
    ("no-limits", re.compile(r"\b(?:explicit|nsfw|adult|graphic|violent|offensive|illegal|unethical|harmful|any|all)\s+"
                             r"(?:\w+\s+)?content\s+(?:is\s+|are\s+)?(?:now\s+)?(?:allowed|permitted|enabled|acceptable|welcome|fine)\b|"
                             r"\b(?:nothing|no\s+(?:topic|subject|question|request|prompt)s?)\s+(?:is|are|will\s+be)\s+(?:off[\s-]limits|"
                             r"taboo|forbidden|prohibited|banned)\b|\banything\s+goes\b", F)),
    ("uncensored", re.compile(r"\b(?:never|not|don'?t|do\s+not|won'?t|will\s+not|cannot|can'?t|must\s+not)\s+(?:\w+\s+)?"
                              r"(?:censor|filter|sanitize|sanitise|water\s+down)\b|"
                              r"\b(?:holding|hold|holds)\s+nothing\s+back\b|\bno\s+holds\s+barred\b|\bpulls?\s+no\s+punches\b", F)),
    # the persona's answer asked for by name: "how Rex would reply", "you are Vex now"
    ("role-play", re.compile(r"\bhow\s+(?!(?:you|i|we|they|he|she|it|one|people|someone|anyone|this|that|the|a|an|your|my|our)\b)"
                             r"[a-z][\w-]{1,20}\s+would\s+(?:reply|respond|answer)\b", F)),
    ("you-are-now", re.compile(r"\byou(?:'re|\s+are)\s+(?!(?:ready|able|free|done|finished|set|all|good|here|there|up|back|out|over|on|"
                               r"at|safe|ok|okay|alone|home|right|wrong|late|early|sure|one|in|not|no|also|only|still|both|"
                               r"\w+ing|\w+ed)\b)[a-z][\w-]{1,20}\s+now\b", F)),
]
SIGNAL_WEIGHT = {"no-disclaimer": 2, "evil-persona": 2, "mode-switch": 1,
                 "punishment": 2, "template-var": 1, "perspective": 2, "profanity": 1}
