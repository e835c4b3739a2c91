"""The queue model of the upgrade run's shaped load (docs/demo-and-chaos.md, "A queue model of the places").

An event simulation, stdlib only: each build has W workers of C activity slots and one queue of sends; a send
holds its slot for the answer's time (slow or hung) or frees it at once; faults send a run to a settle delay or
a not-sent backoff of one period P; a worker is killed every 15 s on the main fleet and on a versioned build
once it was current, its sends stay open until the send timeout, and its replacement polls after
`restart_s`. Runs of 2.0 move to N at their next workflow task after N's switch; N+1 ramps once they drained.
It counts the open runs of the build being left in each place at each switch. It ignores workflow-task latency,
lookups and the Postgres and Temporal restarts: a guide to the shape, not a prediction.

    python3 dev/demo/upgrade/queue_model.py
"""
import heapq
import itertools
import random

PLACES = ('claimed', 'mid', 'settle', 'backoff')
TODAY_MIX = dict(slow=.40, hang=.08, atd=.14, e5=.03, r429=.15, r503=.15, drop=.02)


def simulate(orders=1000, at=100, period=150, slots=18, workers=3, shares=(.28, .22, .24, .23), mix=None,
             slow_share_of_period=.5, ramp=.5, kill_every=15, restart_s=20, seed=1):
    mix = dict(mix or TODAY_MIX)
    mix['ok'] = 1 - sum(mix.values())
    slow = slow_share_of_period * period
    overall = slow + 6
    send_timeout = overall + 10
    rnd = random.Random(seed)
    builds = {b: [dict(free=slots, alive=True, inflight=set()) for _ in range(workers)] for b in ('u', 'n', 'n1')}
    queues = {b: [] for b in builds}
    events, seq, runs = [], itertools.count(), {}

    def push(t, kind, data=None):
        heapq.heappush(events, (t, next(seq), kind, data))

    steps = [(0, shares[0] * orders / at)] + [
        (at + i * period, shares[s] * orders / period) for i, s in enumerate((1, 2, 3, 1))]
    t = 0.0
    for order in range(orders):
        push(t, 'start', order)
        t += 1 / [rate for start, rate in steps if start <= t][-1]
    for k in range(1, 2000):
        push(k * kill_every, 'kill')
    push(at, 'switch', 0)
    state = dict(current='u', ramping=None, killable=[], switches=[])

    def move_if_unversioned(run):
        if run['build'] == 'u' and state['current'] != 'u':
            run['build'] = 'n'

    def dispatch(build, now):
        while queues[build]:
            free = [w for w in builds[build] if w['alive'] and w['free'] > 0]
            if not free:
                return
            worker = max(free, key=lambda w: w['free'])
            rid = queues[build].pop(0)
            worker['free'] -= 1
            worker['inflight'].add(rid)
            run = runs[rid]
            run['state'] = 'mid'
            draw, total = rnd.random(), 0.0
            for outcome, share in mix.items():
                total += share
                if draw < total:
                    break
            run['outcome'] = outcome
            push(now + {'slow': slow, 'hang': overall}.get(outcome, .3), 'answered', (rid, worker, build))

    def claim(rid, now):
        run = runs[rid]
        move_if_unversioned(run)
        run['state'] = 'claimed'
        queues[run['build']].append(rid)
        dispatch(run['build'], now)

    def after_send(rid, now, timed_out=False):
        run = runs[rid]
        move_if_unversioned(run)
        if run['outcome'] in ('slow', 'ok') and not timed_out:
            run['state'] = 'closed'
        elif run['outcome'] in ('r429', 'r503'):
            run['state'] = 'backoff'
            push(now + period, 'retry', rid)
        else:
            run['state'] = 'settle'
            push(now + period, 'settled', rid)

    while events:
        now, _, kind, data = heapq.heappop(events)
        if now > 3000:
            break
        if kind == 'start':
            ramping = state['ramping']
            runs[data] = dict(build=ramping if ramping and rnd.random() < ramp else state['current'])
            claim(data, now)
        elif kind == 'answered':
            rid, worker, build = data
            if worker['alive']:
                worker['free'] += 1
                worker['inflight'].discard(rid)
                after_send(rid, now)
                dispatch(build, now)
        elif kind == 'timed-out':
            after_send(data, now, timed_out=True)
        elif kind == 'settled':
            run = runs[data]
            move_if_unversioned(run)
            found = run['outcome'] in ('atd', 'hang', 'slow') or (run['outcome'] == 'e5' and rnd.random() < .5)
            if found:
                run['state'] = 'closed'
            else:
                run['state'] = 'backoff'
                push(now + period, 'retry', data)
        elif kind == 'retry':
            claim(data, now)
        elif kind == 'polls':
            build, worker = data
            worker['alive'] = True
            dispatch(build, now)
        elif kind == 'kill' and len(state['switches']) < 4:
            for build in ['u'] + ([rnd.choice(state['killable'])] if state['killable'] else []):
                alive = [w for w in builds[build] if w['alive']]
                if not alive:
                    continue
                victim = rnd.choice(alive)
                builds[build].remove(victim)
                for rid in victim['inflight']:
                    push(now + send_timeout - rnd.uniform(0, min(send_timeout, slow)), 'timed-out', rid)
                fresh = dict(free=slots, alive=False, inflight=set())
                builds[build].append(fresh)
                push(now + restart_s, 'polls', (build, fresh))
        elif kind == 'switch':
            left = ('u', 'n', 'n', 'n1')[data]
            if data == 1 and any(r['build'] == 'u' and r.get('state') != 'closed' for r in runs.values()):
                push(now + 1, 'switch', 1)
                continue
            placed = {p: 0 for p in PLACES}
            for run in runs.values():
                if run['build'] == left and run.get('state') in placed:
                    placed[run['state']] += 1
            state['switches'].append((round(now), placed))
            if data == 0:
                state['current'] = 'n'
                state['killable'].append('n')
            elif data == 1:
                state['ramping'] = 'n1'
            elif data == 2:
                state['current'], state['ramping'] = 'n1', None
                state['killable'].append('n1')
            else:
                state['current'] = 'n'
            if data < 3:
                push(now + period, 'switch', data + 1)
    return state['switches']


def least_per_place(shape, seeds=range(1, 6), restarts=(10, 20, 35)):
    least = [[None] * 4 for _ in range(4)]
    for seed in seeds:
        for restart_s in restarts:
            for i, (_, placed) in enumerate(simulate(seed=seed, restart_s=restart_s, **shape)):
                for j, place in enumerate(PLACES):
                    least[i][j] = placed[place] if least[i][j] is None else min(least[i][j], placed[place])
    return least


if __name__ == '__main__':
    shapes = {
        "today's (18 slots, slow P/2, ramp 50%)": dict(),
        "the search's best": dict(
            slots=11, slow_share_of_period=.7, ramp=.2, shares=(.23, .28, .19, .27),
            mix=dict(slow=.35, hang=.08, atd=.18, e5=.02, r429=.17, r503=.17, drop=.01)),
    }
    for name, shape in shapes.items():
        print(name)
        for switch, least in zip(('N current', 'N+1 ramping', 'N+1 current', 'back to N'), least_per_place(shape)):
            print(f'  {switch:12} least ' + ', '.join(f'{p} {n}' for p, n in zip(PLACES, least)))
