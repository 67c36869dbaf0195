"""No two modules of the package import each other, directly or round a longer loop (function-level
imports included): the rooms' order (the layers contract in pyproject.toml, `lint-imports` in CI)
says nothing about modules inside one room."""

import grimp


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, edges = work[-1]
            for w in edges:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def test_no_module_imports_round_a_loop():
    assert cycles(grimp.build_graph("urd")) == []


def test_a_loop_is_found_and_named():
    edges = {"a.b": {"a.c"}, "a.c": {"a.d"}, "a.d": {"a.b"}, "a.e": {"a.b"}}  # a.b -> a.c -> a.d -> a.b

    class Graph:
        modules = frozenset(edges)

        def find_modules_directly_imported_by(self, m):
            return edges[m]

    assert cycles(Graph()) == [["a.b", "a.c", "a.d"]]
