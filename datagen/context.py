"""What every generator gets and gives back."""

from __future__ import annotations

from dataclasses import dataclass

from pyiceberg.catalog import Catalog

from bench.core.catalog import CatalogSettings
from bench.core.dataset import GroundTruth
from bench.core.progress import Progress
from datagen.recipes import DeletesRecipe, SmallFilesRecipe


@dataclass
class GenContext:
    catalog: Catalog
    settings: CatalogSettings
    ident: str  # "namespace.table", not yet created
    recipe: SmallFilesRecipe | DeletesRecipe
    scale: float
    seed: int
    workers: int
    progress: Progress
    file_scale: float | None = None  # the file counts' scale when not `scale` (--file-scale)


@dataclass
class Generated:
    files: int  # live data + delete files
    bytes: int
    rows: int  # rows a reader sees
    ground_truth: GroundTruth
