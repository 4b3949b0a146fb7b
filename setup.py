"""Package layout beyond pyproject.toml: the top-level Hydra tree ``conf/`` is shipped inside the
package as ``bockparse/conf`` (package data), so that an installed wheel finds its configs
(``bockparse.train.CONF_DIR``) while ``conf/`` stays the one copy in the repository. Each config
group is a data-only package, so that setuptools installs its files without warnings;
machine-local configs (the git-ignored ``conf/local/``) are never packaged. The shipped treebank
sample ``data/ud-english-ewt-sample`` goes in as ``bockparse/sample``, so that ``data=ewt-sample``
trains from any folder (``bockparse.training.checks.sample_dir``)."""

from setuptools import find_namespace_packages, find_packages, setup

CONF = [
    "bockparse.conf",
    *(
        f"bockparse.conf.{group}"
        for group in find_namespace_packages("conf", exclude=["local", "local.*"])
    ),
]

SAMPLE = "bockparse.sample"

setup(
    packages=[*find_packages("src"), *CONF, SAMPLE],
    package_dir={"": "src", "bockparse.conf": "conf", SAMPLE: "data/ud-english-ewt-sample"},
    package_data={
        **{package: ["*.yaml"] for package in CONF},
        SAMPLE: ["*.conllu", "*.md", "*.txt"],
    },
)
