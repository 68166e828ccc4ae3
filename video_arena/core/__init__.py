"""The benchmark's contract as code, below every runner and every reader: the tasks tree (tasks.py),
instruction rendering, both protocols' prompts, answer extraction, the judge loader, the results
folder and run record (results.py), the compared condition fields; Protocol A's condition file
(condition.py), reference request (request.py) and provenance check (provenance.py); the egress
audit of an agent's transcript (audit.py)."""
from video_arena.core.answers import answer_candidates, extract_answer
from video_arena.core.instruction import (InstructionMarkerError, instruction_for, protocol_letter,
                                          render_instruction, text_digest)
from video_arena.core.prompts import protocol_a_prompt
from video_arena.core.tasks import (ANSWER_ROOT_KEY, DELTA_LABELS, ROW_FIELDS, GameDefinition,
                                    TasksTreeError, UnknownCase, UnknownGame, iter_cases,
                                    list_games, load_cases, load_game, parse_game_toml, resolve)

__all__ = [
    "ANSWER_ROOT_KEY", "DELTA_LABELS", "ROW_FIELDS", "GameDefinition", "InstructionMarkerError",
    "TasksTreeError", "UnknownCase", "UnknownGame", "answer_candidates", "extract_answer",
    "instruction_for", "iter_cases", "list_games", "load_cases", "load_game", "parse_game_toml",
    "protocol_a_prompt", "protocol_letter", "render_instruction", "resolve", "text_digest",
]
