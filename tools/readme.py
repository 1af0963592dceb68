"""Build README.md from nbs/index.ipynb (quarto is not available here): execute it, drop `#| hide` cells,
strip `#|` directive lines, export to Markdown."""
import re
from pathlib import Path
import nbformat
from nbclient import NotebookClient
from nbconvert import MarkdownExporter

root = Path(__file__).resolve().parent.parent
nb = nbformat.read(root/'nbs'/'index.ipynb', as_version=4)
NotebookClient(nb, kernel_name='python3', timeout=600, resources={'metadata': {'path': str(root/'nbs')}}).execute()
nb.cells = [c for c in nb.cells if not (c.cell_type == 'code' and re.match(r'^#\|\s*hide', c.source))]
for c in nb.cells:
    if c.cell_type != 'code': continue
    c.source = re.sub(r'^#\|.*\n?', '', c.source, flags=re.M)
    # one block per stream: how the kernel split the prints must not show in the README
    outs = []
    for o in c.outputs:
        if o.output_type == 'stream' and outs and outs[-1].output_type == 'stream' and outs[-1].name == o.name:
            outs[-1].text += o.text
        else: outs.append(o)
    c.outputs = outs
md, _ = MarkdownExporter(exclude_input_prompt=True, exclude_output_prompt=True).from_notebook_node(nb)
(root/'README.md').write_text('<!-- generated from nbs/index.ipynb by tools/readme.py; do not edit -->\n\n' + md)
print('wrote README.md')
