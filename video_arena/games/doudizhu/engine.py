"""Doudizhu games and V_t on rlcard's game engine (rlcard 1.2.0, MIT).

* Deal: `rlcard.games.doudizhu.DoudizhuGame` with its RandomState seeded by the deal seed.  Player 0
  is always the landlord (rlcard's bidding is disabled); play goes 0 -> 1 -> 2 -> 0.
* Players: rlcard's `DouDizhuRuleAgentV1`, ported here decision for decision (`rule_action`) because
  importing `rlcard.models` imports `rlcard.agents`, which runs `pip freeze` in a subprocess.  The
  port differs only in its randomness: where the agent calls the global `np.random.choice` over the
  legal actions, the port calls a seeded `random.Random` over the SORTED legal actions (rlcard builds
  the list from a set, whose order depends on PYTHONHASHSEED).
* V_t = P(landlord wins) over `n` playouts from the exact full state (all hands known) in which all
  three seats play the rule policy with probability 1 - epsilon and a uniformly random legal action
  with probability epsilon.  Playout k uses the seed (seed, k) at every position of a game (common
  random numbers: the difference between two positions is less noisy than either value).

Card notation (rlcard's): ranks 3 4 5 6 7 8 9 T J Q K A 2, B = black (small) joker, R = red (big)
joker; a play is its ranks sorted from low to high, e.g. "33344", "TJQKA", "BR".
"""
from __future__ import annotations

import copy
import random

import numpy as np
from rlcard.games.doudizhu import Game as DoudizhuGame
from rlcard.games.doudizhu.utils import CARD_TYPE, INDEX
from rlcard.utils.utils import init_54_deck

RANKS = "3456789TJQKA2BR"
RANK_INDEX = {r: i for i, r in enumerate(RANKS)}
LANDLORD = 0


def sort_cards(cards: str) -> str:
    return "".join(sorted(cards, key=RANK_INDEX.__getitem__))


def rank_of(card: str) -> str:
    """The rank letter of a suited card ('HT' -> 'T', 'BJ' -> 'B', 'RJ' -> 'R')."""
    return {"BJ": "B", "RJ": "R"}.get(card, card[1:])


def card_kind(action: str) -> str:
    """rlcard's combination name of a play ('solo', 'pair', 'bomb', 'rocket', 'solo_chain_5', ...)."""
    if action == "pass":
        return "pass"
    return CARD_TYPE[0][action][0][0]


# -- the rule agent (port of rlcard.models.doudizhu_rule_models.DouDizhuRuleAgentV1) ---------------------
def _card_str2list(hand: str) -> list[int]:
    hand_list = [0 for _ in range(15)]
    for card in hand:
        hand_list[INDEX[card]] += 1
    return hand_list


def _list2card_str(hand_list) -> str:
    cards = [card for card in INDEX]
    return "".join(cards[i] * count for i, count in enumerate(hand_list))


def _pick_chain(hand_list, count):
    chains = []
    str_card = [card for card in INDEX]
    hand_list = [str(card) for card in hand_list]
    hand = "".join(hand_list[:12])
    chain_list = hand.split("0")
    add = 0
    for index, chain in enumerate(chain_list):
        if len(chain) > 0:
            if len(chain) >= 5:
                start = index + add
                min_count = int(min(chain)) // count
                if min_count != 0:
                    str_chain = ""
                    for num in range(len(chain)):
                        str_chain += str_card[start + num]
                        hand_list[start + num] = int(hand_list[start + num]) - int(min(chain))
                    for _ in range(min_count):
                        chains.append(str_chain)
            add += len(chain)
    hand_list = [int(card) for card in hand_list]
    return chains, hand_list


def _combine_cards(hand: str) -> dict[str, list[str]]:
    comb = {"rocket": [], "bomb": [], "trio": [], "trio_chain": [],
            "solo_chain": [], "pair_chain": [], "pair": [], "solo": []}
    if hand[-2:] == "BR":
        comb["rocket"].append("BR")
        hand = hand[:-2]
    hand_cp = hand
    for index in range(len(hand_cp) - 3):
        if hand_cp[index] == hand_cp[index + 3]:
            bomb = hand_cp[index: index + 4]
            comb["bomb"].append(bomb)
            hand = hand.replace(bomb, "")
    hand_cp = hand
    for index in range(len(hand_cp) - 2):
        if hand_cp[index] == hand_cp[index + 2]:
            trio = hand_cp[index: index + 3]
            if (len(comb["trio"]) > 0 and INDEX[trio[-1]] < 12
                    and (INDEX[trio[-1]] - 1) == INDEX[comb["trio"][-1][-1]]):
                comb["trio"][-1] += trio
            else:
                comb["trio"].append(trio)
            hand = hand.replace(trio, "")
    only_trio, only_trio_chain = [], []
    for trio in comb["trio"]:
        (only_trio if len(trio) == 3 else only_trio_chain).append(trio)
    comb["trio"], comb["trio_chain"] = only_trio, only_trio_chain
    hand_list = _card_str2list(hand)
    chains, hand_list = _pick_chain(hand_list, 1)
    comb["solo_chain"] = chains
    chains, hand_list = _pick_chain(hand_list, 2)
    comb["pair_chain"] = chains
    hand = _list2card_str(hand_list)
    index = 0
    while index < len(hand) - 1:
        if hand[index] == hand[index + 1]:
            comb["pair"].append(hand[index] + hand[index + 1])
            index += 2
        else:
            comb["solo"].append(hand[index])
            index += 1
    if index == (len(hand) - 1):
        comb["solo"].append(hand[index])
    return comb


def rule_action(raw: dict, actions: list[str], rng: random.Random) -> str:
    """DouDizhuRuleAgentV1.step on rlcard's raw state; `actions` are the legal actions, sorted."""
    trace = raw["trace"]
    if len(trace) == 0 or (len(trace) >= 3 and trace[-1][1] == "pass" and trace[-2][1] == "pass"):
        comb = _combine_cards(raw["current_hand"])
        min_card = raw["current_hand"][0]
        for _, acts in comb.items():
            for action in acts:
                if min_card in action:
                    return action
        raise RuntimeError("rule agent found no lead")  # pragma: no cover (the solo always holds min_card)
    target = trace[-1][-1]
    target_player = trace[-1][0]
    if target == "pass":
        target = trace[-2][-1]
        target_player = trace[-1][0]  # sic: rlcard's agent takes the passer here
    the_type = CARD_TYPE[0][target][0][0]
    chosen_action, rank = "", 1000
    for action in actions:
        if action != "pass" and the_type == CARD_TYPE[0][action][0][0]:
            if int(CARD_TYPE[0][action][0][1]) < rank:
                rank = int(CARD_TYPE[0][action][0][1])
                chosen_action = action
    if chosen_action != "":
        return chosen_action
    landlord = raw["landlord"]
    if target_player != landlord and raw["self"] != landlord:
        return "pass"
    return rng.choice(actions)


def policy_action(game: DoudizhuGame, rng: random.Random, epsilon: float = 0.0) -> str:
    raw = game.state
    actions = sorted(raw["actions"])
    if epsilon and rng.random() < epsilon:
        return rng.choice(actions)
    action = rule_action(raw, actions, rng)
    if action not in actions:
        # the agent's lead heuristics can name a combination rlcard does not list (never seen in
        # practice; kept so a playout can never make an illegal move)
        action = actions[0]
    return action


# -- games -------------------------------------------------------------------------------------------
class Game(DoudizhuGame):
    """rlcard's game, minus the one piece of state no player here reads: `others_hand` in the raw state
    (the merged hands of the other two seats, the most expensive part of every step)."""

    def _get_others_current_hand(self, player) -> str:
        return ""


def new_game(deal_seed: int) -> Game:
    game = Game()
    game.np_random = np.random.RandomState(deal_seed)
    game.init_game()
    return game


class _Arranged:
    """Stands in for the deal's RandomState: its one use in rlcard's Doudizhu (the dealer's shuffle) puts the
    deck in a given order instead."""

    def __init__(self, order: list[str]):
        self.order = order

    def shuffle(self, deck: list) -> None:
        by_index = {c.get_index(): c for c in deck}
        deck[:] = [by_index[c] for c in self.order]


def deal_problem(hands: list[list[str]], bottom: list[str]) -> str:
    """"" when `hands` (the landlord's 20 cards, then the next seat's 17, then the last seat's 17, suited
    cards as rlcard spells them: 'S3', 'HT', 'BJ', 'RJ') and `bottom` (the landlord's 3 extra cards, among
    its 20) are one 54-card deck dealt as rlcard deals it; else one line saying what is wrong."""
    deck = [c.get_index() for c in init_54_deck()]
    if [len(h) for h in hands] != [20, 17, 17]:
        return f"the hands hold {', '.join(str(len(h)) for h in hands)} cards: the landlord 20, the peasants 17 each"
    held = [c for h in hands for c in h]
    unknown = sorted(set(held) - set(deck))
    if unknown:
        return f"{unknown[0]!r} is not a card (suit S, H, D or C and rank 3-9, T, J, Q, K, A, 2; or BJ, RJ)"
    twice = sorted({c for c in held if held.count(c) > 1})
    if twice:
        return f"{twice[0]} is dealt twice: the hands are not one deck"
    if len(bottom) != 3 or len(set(bottom)) != 3 or not set(bottom) <= set(hands[0]):
        return "the landlord's three extra cards must be three of the landlord's 20"
    return ""


def game_from_hands(hands: list[list[str]], bottom: list[str]) -> Game:
    """rlcard's game dealt these hands (`deal_problem` checks them first), the landlord (player 0) to lead."""
    problem = deal_problem(hands, bottom)
    if problem:
        raise ValueError(problem)
    first = [c for c in hands[0] if c not in bottom]
    game = Game()
    game.np_random = _Arranged(first + hands[1] + hands[2] + list(bottom))
    game.init_game()
    return game


def game_from_ranks(hands: list[str]) -> Game:
    """A game at its start whose three hands hold these ranks (the landlord's 20, then 17 and 17): what a
    watcher sees, no suit.  Suits are given in a fixed order (no play depends on them) and the landlord's
    three extra cards are the last three of its sorted hand.  ValueError when they are not a deal."""
    if [len(h) for h in hands] != [20, 17, 17] or sort_cards("".join(hands)) != sort_cards(RANKS[:13] * 4 + "BR"):
        raise ValueError("the hands are not a deal of the 54 cards (20, 17 and 17 cards)")
    suits = {r: (["BJ"] if r == "B" else ["RJ"] if r == "R" else [s + r for s in "SHDC"]) for r in RANKS}
    landlord = sort_cards(hands[0])
    suited = [[suits[r].pop(0) for r in h] for h in (landlord[:17], hands[1], hands[2], landlord[17:])]
    return game_from_hands([suited[0] + suited[3], suited[1], suited[2]], suited[3])


def hands_with_suits(game: DoudizhuGame) -> list[list[str]]:
    """Each seat's current hand in rlcard's order, cards as suit+rank ('S3', 'HT', 'BJ', 'RJ')."""
    return [[c.get_index() for c in p.current_hand] for p in game.players]


def play_game(deal_seed: int, play_seed: int, epsilon: float = 0.0) -> tuple[DoudizhuGame, list[tuple[int, str]]]:
    game = new_game(deal_seed)
    rng = random.Random(play_seed)
    while not game.is_over():
        game.step(policy_action(game, rng, epsilon))
    return game, [(p, a) for p, a in game.round.trace]


def replay_game(deal_seed: int, trace: list[tuple[int, str]], upto: int | None = None) -> DoudizhuGame:
    """The exact game after the first `upto` plays of `trace` (every play checked legal)."""
    game = new_game(deal_seed)
    for n, (seat, action) in enumerate(trace[:upto]):
        if game.is_over() or game.round.current_player != seat:
            raise ValueError(f"play {n}: seat {seat} is not to move")
        if action not in game.state["actions"]:
            raise ValueError(f"play {n}: {action!r} is not legal for seat {seat}")
        game.step(action)
    return game


def _copy(game: DoudizhuGame) -> DoudizhuGame:
    """A deep copy that shares what play never mutates: the Card objects, the dealer, the deal's RNG."""
    memo: dict[int, object] = {id(game.np_random): game.np_random, id(game.round.dealer): game.round.dealer}
    for p in game.players:
        for c in p.current_hand:
            memo[id(c)] = c
        for cards in p._recorded_played_cards:
            for c in cards:
                memo[id(c)] = c
    return copy.deepcopy(game, memo)


def rollout_value(game: DoudizhuGame, n: int, seed: int, epsilon: float) -> float:
    """P(landlord wins) over n seeded epsilon-rule playouts from `game`'s exact state."""
    if game.is_over():
        return 1.0 if game.winner_id == LANDLORD else 0.0
    wins = 0
    for k in range(n):
        rng = random.Random(seed * 1_000_003 + k)
        g = _copy(game)
        while not g.is_over():
            g.step(policy_action(g, rng, epsilon))
        wins += g.winner_id == LANDLORD
    return wins / n
