package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// ensureServices creates the headless peer Service and the client Service when missing, and
// puts back the fields the operator depends on when someone changed them.
func (r *Reconciler) ensureServices(ctx context.Context, c *api.EtcdCluster) error {
	for _, want := range []*corev1.Service{member.PeerService(c), member.ClientService(c)} {
		if err := r.ensureService(ctx, c, want); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) ensureService(ctx context.Context, c *api.EtcdCluster, want *corev1.Service) error {
	have, err := r.deps.Services.Services(c.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = r.deps.Kube.CoreV1().Services(c.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("creating service %s: %w", want.Name, err)
		}
		r.log(c).WithField("service", want.Name).Info("created service")
		r.event(c, corev1.EventTypeNormal, EventServiceCreated, "Created service %s", want.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting service %s: %w", want.Name, err)
	}
	if !metav1.IsControlledBy(have, c) {
		return fmt.Errorf("service %s exists and is not owned by this cluster", want.Name)
	}
	if equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) &&
		have.Spec.PublishNotReadyAddresses == want.Spec.PublishNotReadyAddresses &&
		equality.Semantic.DeepEqual(have.Spec.Ports, want.Spec.Ports) {
		return nil
	}
	upd := have.DeepCopy()
	upd.Spec.Selector = want.Spec.Selector
	upd.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
	upd.Spec.Ports = want.Spec.Ports
	if _, err := r.deps.Kube.CoreV1().Services(c.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating service %s: %w", want.Name, err)
	}
	r.log(c).WithField("service", want.Name).Info("restored service spec")
	return nil
}
