"""The upstream Kubernetes VPA recommender model, vectorised over many containers."""

from recommender.vpa.estimators import VpaRecommendation
from recommender.vpa.model import VpaModel
from recommender.vpa.settings import VpaSettings

__all__ = ["VpaModel", "VpaRecommendation", "VpaSettings"]
