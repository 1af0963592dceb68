"Package metadata for omni_gspo; every value is read from settings.ini (the nbdev convention)."
from configparser import ConfigParser
from pathlib import Path
import shutil
import setuptools
from setuptools.command.build_py import build_py

cfg = ConfigParser(delimiters=['='])
cfg.read('settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']

licenses = {'apache2': ('Apache Software License 2.0', 'OSI Approved :: Apache Software License')}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable']
requirements = cfg.get('requirements', '').split()
dev_requirements = cfg.get('dev_requirements', '').split()
extras = {
    'dev': dev_requirements,
    'audio': ['imageio-ffmpeg'],   # an ffmpeg binary, for compressed audio (m4a, mp3) that soundfile cannot read
    'vllm': ['vllm>=0.11'],
    'loggers': ['tensorboard', 'wandb'],   # logging.loggers=tensorboard,wandb
    'npu': ['torch-npu'],
    'ray': ['ray>=2.40'],   # several devices or machines: hardware.nnodes × hardware.gpus_per_node > 1
}


class BuildWithNotebooks(build_py):
    "Also put the recipe notebooks (nbs/train_*.ipynb) into the package, as omni_gspo/notebooks: `omni-gspo notebooks`."
    def run(self):
        super().run()
        dest = Path(self.build_lib)/cfg['lib_path']/'notebooks'
        dest.mkdir(parents=True, exist_ok=True)
        for nb in sorted(Path(cfg['nbs_path']).glob('train_*.ipynb')): shutil.copyfile(nb, dest/nb.name)

setuptools.setup(
    name=cfg['lib_name'],
    version=cfg['version'],
    description=cfg['description'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    author=cfg['author'],
    author_email=cfg['author_email'],
    license=licenses[cfg['license']][0],
    keywords=cfg['keywords'],
    url=cfg['git_url'],
    classifiers=['Development Status :: ' + statuses[int(cfg['status']) - 1],
                 'Intended Audience :: ' + cfg['audience'].title(),
                 'Natural Language :: ' + cfg['language'].title(),
                 'Programming Language :: Python :: 3.11'],
    packages=setuptools.find_packages(include=['omni_gspo', 'omni_gspo.*']),
    include_package_data=True,
    install_requires=requirements,
    extras_require=extras,
    python_requires='>=' + cfg['min_python'],
    zip_safe=False,
    cmdclass={'build_py': BuildWithNotebooks},
    entry_points={'console_scripts': cfg.get('console_scripts', '').split('\n'),
                  'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
)
