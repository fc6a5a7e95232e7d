"""Griffe extension (mkdocs.yml, mkdocstrings ``extensions``): a public class with no
docstring of its own is documented by its module's docstring.

hiapi often writes a class's why and its formula once, at the top of the module that holds it
(``optimizers/adam.py``: the update rule and the papers; ``distribute/strategy.py``: what a
``Strategy`` does), and leaves the class itself without a docstring, so the API reference would
show a bare signature. Functions keep their own (a module of many functions would repeat its
docstring on each).
"""
import griffe


class ModuleDocstrings(griffe.Extension):
    def on_module_members(self, *, mod, **kwargs):
        if mod.docstring is None:
            return
        for member in mod.members.values():
            if member.is_alias or member.name.startswith("_") or not member.is_class:
                continue
            if member.docstring is None:
                member.docstring = griffe.Docstring(mod.docstring.value, parent=member)
