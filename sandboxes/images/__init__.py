"""Local ROCm build images: recipes, offline builds, and what is installed or pullable."""

from sandboxes.images.build import BuiltImage, ImageBuildError, build_image
from sandboxes.images.recipes import DEFAULT_RECIPE, RECIPES, ImageRecipe, get_recipe

__all__ = [
    "DEFAULT_RECIPE",
    "RECIPES",
    "BuiltImage",
    "ImageBuildError",
    "ImageRecipe",
    "build_image",
    "get_recipe",
]
