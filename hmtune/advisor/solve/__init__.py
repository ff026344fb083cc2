"""The solvers behind `hmtune advise`'s strategies (hmtune/advisor/strategies.py picks
one by name): `greedy` (misses and density: an order, then first fit), `limited` (a
Problem seen from its limited tiers: profits over each site's best unlimited tier),
`knapsack` (one limited tier, exact), `assign` (several limited tiers: Lagrangian bound,
fixing, a MIP for the core), `mip` (binary programs and their LP relaxations through
PuLP, the solver choice), `timeline` (when each site's blocks are live, reduced to the
peaks), `lifetime` (ilp-lifetime: capacity checked at every peak, rows added lazily)
and `ilp` (the exact strategies' placements, the density one when no MIP solver runs).
"""
